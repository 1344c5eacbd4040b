package middleware

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/connkit/connkit/internal/schema"
	"github.com/matryer/is"
)

// collect is a destination that keeps what it is asked to write.
type collect struct {
	base
	got []opencdc.Record
}

func (c *collect) Write(_ context.Context, r []opencdc.Record) (int, error) {
	c.got = append(c.got, r...)
	return len(r), nil
}

// listSource returns its records one Read at a time.
type listSource struct {
	recs []opencdc.Record
}

func (s *listSource) Open(context.Context, opencdc.Position) error { return nil }
func (s *listSource) Teardown(context.Context) error               { return nil }
func (s *listSource) Read(ctx context.Context) (opencdc.Record, error) {
	if len(s.recs) == 0 {
		return opencdc.Record{}, ctx.Err()
	}
	r := s.recs[0]
	s.recs = s.recs[1:]
	return r, nil
}

func structured(i int) opencdc.Record {
	return opencdc.Record{
		Position:  opencdc.Position(strconv.Itoa(i)),
		Operation: opencdc.OperationUpdate,
		Metadata:  opencdc.Metadata{opencdc.MetadataCollection: "users"},
		Key:       opencdc.StructuredData{"id": int64(i)},
		Payload: opencdc.Change{
			Before: opencdc.StructuredData{"id": int64(i), "name": "old", "big": int64(1<<62 + 1), "raw": []byte{0, 255}},
			After:  opencdc.StructuredData{"id": int64(i), "name": "new", "big": int64(1<<62 + 1), "raw": []byte{0, 255}},
		},
	}
}

// encoded reads n structured records through EncodeSchemas into reg.
func encoded(t *testing.T, reg schema.Registry, n int) []opencdc.Record {
	t.Helper()
	var recs []opencdc.Record
	for i := range n {
		recs = append(recs, structured(i))
	}
	src := encodeWith(reg, Subjects{Key: "key", Payload: "payload", Context: "conn-1"})(&listSource{recs: recs})
	out := make([]opencdc.Record, n)
	for i := range out {
		var err error
		out[i], err = src.Read(t.Context())
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func TestSchemasRoundTrip(t *testing.T) {
	is := is.New(t)
	reg := schema.NewInMemory()
	recs := encoded(t, reg, 3)
	for _, r := range recs {
		_, raw := r.Payload.After.(opencdc.RawData)
		is.True(raw) // encoded
		is.Equal(r.Metadata[opencdc.MetadataPayloadSchemaSubject], "conn-1:users.payload")
		is.Equal(r.Metadata[opencdc.MetadataPayloadSchemaVersion], "1") // registered once for the shape
		is.Equal(r.Metadata[opencdc.MetadataKeySchemaSubject], "conn-1:users.key")
	}

	dst := &collect{}
	d := decodeWith(reg, true, true)(dst)
	n, err := d.Write(t.Context(), recs)
	is.NoErr(err)
	is.Equal(n, 3)
	for i, r := range dst.got {
		want := structured(i)
		is.Equal(r.Key, want.Key)
		is.Equal(r.Payload, want.Payload) // int64 beyond 2^53 and bytes kept exactly
	}
	_, raw := recs[0].Payload.After.(opencdc.RawData)
	is.True(raw) // the input slice is left alone
}

func TestDecodeFailureNamesTheRecordAndWritesThoseBefore(t *testing.T) {
	is := is.New(t)
	reg := schema.NewInMemory()
	recs := encoded(t, reg, 5)
	recs[3].Payload.After = opencdc.RawData{0xff, 0xff, 0xff}
	dst := &collect{}
	n, err := decodeWith(reg, true, true)(dst).Write(t.Context(), recs)
	is.Equal(n, 3)
	is.Equal(len(dst.got), 3)
	is.True(err != nil)
	for _, want := range []string{`record 3 (position "3")`, `payload.after`, `subject "conn-1:users.payload" version 1`} {
		is.True(strings.Contains(err.Error(), want)) // names the record, the field and the schema
	}
	is.Equal(strings.Count(err.Error(), "conn-1:users.payload"), 1) // once, not by every layer
}

func TestDecodeMissingSubject(t *testing.T) {
	is := is.New(t)
	recs := encoded(t, schema.NewInMemory(), 2)
	dst := &collect{}
	n, err := decodeWith(schema.NewInMemory(), true, true)(dst).Write(t.Context(), recs)
	is.Equal(n, 0)
	is.True(errors.Is(err, schema.ErrSubjectNotFound))
	is.True(strings.Contains(err.Error(), `record 0 (position "0")`))
	is.True(strings.Contains(err.Error(), "conn-1:users.key"))
}

func TestDecodeLeavesRecordsWithoutSchemas(t *testing.T) {
	is := is.New(t)
	recs := []opencdc.Record{{Position: opencdc.Position("a"), Payload: opencdc.Change{After: opencdc.RawData(`{"x":1}`)}}}
	dst := &collect{}
	_, err := decodeWith(schema.NewInMemory(), true, true)(dst).Write(t.Context(), recs)
	is.NoErr(err)
	is.Equal(dst.got[0].Payload.After, opencdc.RawData(`{"x":1}`))

	recs[0].Metadata = opencdc.Metadata{opencdc.MetadataPayloadSchemaSubject: "s", opencdc.MetadataPayloadSchemaVersion: "x"}
	_, err = decodeWith(schema.NewInMemory(), true, true)(dst).Write(t.Context(), recs)
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), "do not name a schema"))
}

func TestEncodeKeepsANamedSchema(t *testing.T) {
	is := is.New(t)
	reg := schema.NewInMemory()
	first := encoded(t, reg, 1)[0]
	rec := structured(7)
	rec.Metadata[opencdc.MetadataPayloadSchemaSubject] = first.Metadata[opencdc.MetadataPayloadSchemaSubject]
	rec.Metadata[opencdc.MetadataPayloadSchemaVersion] = "1"
	got, err := encodeWith(reg, Subjects{Payload: "other"})(&listSource{recs: []opencdc.Record{rec}}).Read(t.Context())
	is.NoErr(err)
	is.Equal(got.Metadata[opencdc.MetadataPayloadSchemaSubject], "conn-1:users.payload")
	_, raw := got.Payload.After.(opencdc.RawData)
	is.True(raw)
	_, structuredKey := got.Key.(opencdc.StructuredData)
	is.True(structuredKey) // keys were not asked for
}

// TestDecodeLeavesEmptyRawData reads a record whose payload after is
// structured and whose before is raw and empty (RawData(nil) in the source;
// on the wire nil and empty raw data are the same, so an empty one arrives):
// the payload schema the metadata names is for the after; the empty before
// holds no value to decode and must not fail the record.
func TestDecodeLeavesEmptyRawData(t *testing.T) {
	is := is.New(t)
	reg := schema.NewInMemory()
	rec := structured(1)
	rec.Payload.Before = opencdc.RawData(nil)
	src := encodeWith(reg, Subjects{Key: "key", Payload: "payload"})(&listSource{recs: []opencdc.Record{rec}})
	got, err := src.Read(t.Context())
	is.NoErr(err)
	is.Equal(got.Payload.Before, opencdc.RawData(nil)) // raw data passes the encoder unchanged
	got.Payload.Before = opencdc.RawData{}             // as it arrives from Conduit

	dst := &collect{}
	n, err := decodeWith(reg, true, true)(dst).Write(t.Context(), []opencdc.Record{got})
	is.NoErr(err)
	is.Equal(n, 1)
	is.Equal(dst.got[0].Payload.After, structured(1).Payload.After)
	is.Equal(dst.got[0].Payload.Before, opencdc.RawData{})
}

// An update that sets columns to and from NULL, or a delete's before
// beside a nil after, is encoded with one schema that holds both sides:
// a field nil on one side is nullable, of the other side's type.
func TestSchemasOfChangesToAndFromNull(t *testing.T) {
	is := is.New(t)
	reg := schema.NewInMemory()
	payloads := []opencdc.Change{
		{Before: opencdc.StructuredData{"a": int64(1), "b": nil, "c": "x", "raw": nil}, After: opencdc.StructuredData{"a": int64(1), "b": "set", "c": nil, "raw": []byte{1}}},
		{Before: opencdc.StructuredData{"a": int64(2), "b": "set", "c": nil, "raw": []byte{2}}, After: opencdc.StructuredData{"a": nil, "b": nil, "c": "y", "raw": nil}},
		{Before: opencdc.StructuredData{"a": int64(3), "b": nil, "c": "z", "raw": nil}},
	}
	var recs []opencdc.Record
	for i, p := range payloads {
		recs = append(recs, opencdc.Record{Position: opencdc.Position(strconv.Itoa(i)), Operation: opencdc.OperationUpdate,
			Metadata: opencdc.Metadata{opencdc.MetadataCollection: "t"}, Payload: p})
	}
	src := encodeWith(reg, Subjects{Payload: "payload", Context: "c"})(&listSource{recs: slices.Clone(recs)})
	dst := &collect{}
	d := decodeWith(reg, true, true)(dst)
	for range recs {
		r, err := src.Read(t.Context())
		is.NoErr(err)
		_, err = d.Write(t.Context(), []opencdc.Record{r})
		is.NoErr(err)
	}
	for i, r := range dst.got {
		is.Equal(r.Payload, payloads[i]) // each side as it was
	}
}
