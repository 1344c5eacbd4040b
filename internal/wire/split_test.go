package wire

import (
	"strconv"
	"strings"
	"testing"

	"github.com/conduitio/conduit-commons/opencdc"
	connectorv2 "github.com/conduitio/conduit-connector-protocol/proto/connector/v2"
	"github.com/matryer/is"
	"google.golang.org/protobuf/proto"
)

// A source's batch of 1000 records of 8 KiB, the v2 engine's default batch,
// is 8 MB: it must travel as several messages Conduit accepts, in order,
// and a record larger than the limit travels alone.
func TestSourceMessagesFitTheLimit(t *testing.T) {
	is := is.New(t)
	const limit = 4 << 20
	var records []opencdc.Record
	for i := range 1000 {
		records = append(records, opencdc.Record{Position: opencdc.Position(strconv.Itoa(i)), Payload: opencdc.Change{After: opencdc.RawData(strings.Repeat("x", 8<<10))}})
	}
	records[500].Payload.After = opencdc.RawData(strings.Repeat("y", 5<<20)) // larger than the limit
	var got []string
	messages := 0
	var bufs Buffers
	is.NoErr(SplitSourceRunResponse(records, limit, &bufs, func(buf *[]byte) error {
		defer bufs.Put(buf) // written: the next message may reuse it
		msg := *buf
		messages++
		var resp connectorv2.Source_Run_Response
		is.NoErr(proto.Unmarshal(msg, &resp))
		if len(msg) > limit {
			is.Equal(len(resp.Records), 1) // only a record larger than the limit
		}
		for _, r := range resp.Records {
			got = append(got, string(r.Position))
		}
		return nil
	}))
	is.Equal(len(got), 1000)
	for i, p := range got {
		is.Equal(p, strconv.Itoa(i)) // in order, each once
	}
	is.True(messages >= 3)
}

// Ten thousand acks with long nack messages are more than 4 MiB: they go
// in several messages, each within the limit, in order.
func TestAckMessagesFitTheLimit(t *testing.T) {
	is := is.New(t)
	const limit = 4 << 20
	var acks []*connectorv2.Destination_Run_Response_Ack
	for i := range 10000 {
		acks = append(acks, &connectorv2.Destination_Run_Response_Ack{Position: []byte(strconv.Itoa(i)), Error: strings.Repeat("e", 1000)})
	}
	parts := SplitAcks(acks, limit)
	is.True(len(parts) > 1)
	n := 0
	for _, p := range parts {
		is.True(proto.Size(&connectorv2.Destination_Run_Response{Acks: p}) <= limit)
		for _, a := range p {
			is.Equal(string(a.Position), strconv.Itoa(n))
			n++
		}
	}
	is.Equal(n, len(acks))
	is.Equal(len(SplitAcks(acks[:3], limit)), 1)
}
