package middleware

import (
	"testing"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/connkit/connkit/internal/schema"
	"github.com/matryer/is"
)

// Avro strings are bytes: a string that is not valid UTF-8, in a value or
// nested, is encoded and decoded byte for byte, never replaced, and left
// to the destination to write exactly or refuse.
func TestSchemasKeepInvalidUTF8(t *testing.T) {
	is := is.New(t)
	reg := schema.NewInMemory()
	rec := opencdc.Record{
		Position:  opencdc.Position("1"),
		Operation: opencdc.OperationCreate,
		Metadata:  opencdc.Metadata{opencdc.MetadataCollection: "users"},
		Key:       opencdc.StructuredData{"id": "k\xff"},
		Payload: opencdc.Change{After: opencdc.StructuredData{
			"name":    "a\xff\xfeb",
			"address": map[string]any{"city": "Z\xfcrich"},
		}},
	}
	src := encodeWith(reg, Subjects{Key: "key", Payload: "payload"})(&listSource{recs: []opencdc.Record{rec}})
	enc, err := src.Read(t.Context())
	is.NoErr(err)
	_, raw := enc.Payload.After.(opencdc.RawData)
	is.True(raw) // encoded

	dst := &collect{}
	n, err := decodeWith(reg, true, true)(dst).Write(t.Context(), []opencdc.Record{enc})
	is.NoErr(err)
	is.Equal(n, 1)
	is.Equal(dst.got[0].Key, rec.Key)
	is.Equal(dst.got[0].Payload.After, rec.Payload.After)
}
