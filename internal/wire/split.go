package wire

import (
	"fmt"

	"github.com/conduitio/conduit-commons/opencdc"
	connectorv2 "github.com/conduitio/conduit-connector-protocol/proto/connector/v2"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// SplitAcks splits acks into runs whose Run response is at most max bytes
// on the wire (an ack larger than that alone goes alone); max <= 0 means
// no limit.
func SplitAcks(acks []*connectorv2.Destination_Run_Response_Ack, max int) [][]*connectorv2.Destination_Run_Response_Ack {
	if max <= 0 {
		return [][]*connectorv2.Destination_Run_Response_Ack{acks}
	}
	var parts [][]*connectorv2.Destination_Run_Response_Ack
	start, size := 0, 0
	for i, a := range acks {
		n := proto.Size(a)
		n += protowire.SizeTag(1) + protowire.SizeBytes(n) - n // the field's tag and length
		if i > start && size+n > max {
			parts = append(parts, acks[start:i])
			start, size = i, 0
		}
		size += n
	}
	return append(parts, acks[start:])
}

// SplitSourceRunResponse encodes records as Run responses of at most limit
// bytes each, in order, into buffers from bufs, and passes each to send,
// which owns it.
func SplitSourceRunResponse(records []opencdc.Record, limit int, bufs *Buffers, send func(*[]byte) error) error {
	buf := bufs.Get(min(limit, 256*len(records)))
	b := (*buf)[:0]
	for i := range records {
		start := len(b) // where record i's field begins
		var content int
		var err error
		b, content = openMessage(b, sourceRunResponseRecords)
		if b, err = appendRecord(b, records[i]); err != nil {
			bufs.Put(buf)
			return fmt.Errorf("record %d at position %q: %w", i, records[i].Position, err)
		}
		b = closeMessage(b, content)
		if len(b) > limit && start > 0 {
			next := bufs.Get(max(len(b)-start, min(limit, 256*(len(records)-i))))
			rest := append((*next)[:0], b[start:]...)
			*buf = b[:start]
			if err := send(buf); err != nil {
				bufs.Put(next)
				return err
			}
			buf, b = next, rest
		}
	}
	if len(b) == 0 {
		bufs.Put(buf)
		return nil
	}
	*buf = b
	return send(buf)
}
