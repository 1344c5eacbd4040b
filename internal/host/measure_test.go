package host

import (
	"testing"

	"github.com/conduitio/conduit-commons/opencdc"
	opencdcv1 "github.com/conduitio/conduit-commons/proto/opencdc/v1"
	connectorv2 "github.com/conduitio/conduit-connector-protocol/proto/connector/v2"
	"github.com/matryer/is"
	"google.golang.org/protobuf/proto"
)

// Scanning a source's message finds what decoding it does: every
// position, in order, and the bytes of the raw payloads.
func TestScannedRecords(t *testing.T) {
	is := is.New(t)
	records := []opencdc.Record{
		{Position: opencdc.Position("1"), Operation: opencdc.OperationCreate, Metadata: opencdc.Metadata{"a": "b"},
			Key: opencdc.RawData("key"), Payload: opencdc.Change{Before: opencdc.RawData("before"), After: opencdc.RawData("12345")}},
		{Position: opencdc.Position("2"), Payload: opencdc.Change{After: opencdc.StructuredData{"x": 1}}},
		{Payload: opencdc.Change{After: opencdc.RawData("123")}}, // no position
	}
	resp := &connectorv2.Source_Run_Response{}
	for _, r := range records {
		p := &opencdcv1.Record{}
		is.NoErr(r.ToProto(p))
		resp.Records = append(resp.Records, p)
	}
	b, err := proto.Marshal(resp)
	is.NoErr(err)
	var m scannedRecords
	is.NoErr(m.UnmarshalWire(b))
	is.Equal(m.positions, [][]byte{[]byte("1"), []byte("2"), nil})
	is.Equal(m.rawBytes, 8)
	var truncated scannedRecords
	is.True(truncated.UnmarshalWire(b[:len(b)-1]) != nil)

	// Kept, each record's field is a destination's request of that record.
	kept := scannedRecords{keep: true}
	is.NoErr(kept.UnmarshalWire(b))
	is.Equal(kept.positions, m.positions)
	is.Equal(len(kept.records), len(records))
	for i, field := range kept.records {
		var req connectorv2.Destination_Run_Request
		is.NoErr(proto.Unmarshal(field, &req))
		is.Equal(len(req.Records), 1)
		is.True(proto.Equal(req.Records[0], resp.Records[i])) // record i
	}
}
