package middleware

import (
	"context"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/connkit/connkit/internal/schema"
)

// The tests drive the wrappers through fakes with methods, as package sdk
// drives them through a connector's.
type (
	writer interface {
		Write(ctx context.Context, records []opencdc.Record) (int, error)
	}
	writerFunc Write
	// reader reads through a Read wrapper one record at a time or many.
	reader struct{ read Read }
)

func (w writerFunc) Write(ctx context.Context, records []opencdc.Record) (int, error) {
	return w(ctx, records)
}

func (r reader) Read(ctx context.Context) (opencdc.Record, error) {
	recs, err := r.read(ctx, 1)
	if err != nil {
		return opencdc.Record{}, err
	}
	return recs[0], nil
}

func (r reader) ReadBatch(ctx context.Context, max int) ([]opencdc.Record, error) {
	return r.read(ctx, max)
}

func wrapWriter(wrap func(Write) Write) func(writer) writer {
	return func(w writer) writer { return writerFunc(wrap(w.Write)) }
}

// decodeWith wraps a destination in the schema decoding, with the schemas
// of reg in the context of every Write, as a plugin has Conduit's.
func decodeWith(reg schema.Registry, key, payload bool) func(writer) writer {
	codecs := schema.NewCodecs(reg)
	return wrapWriter(func(w Write) Write {
		decode := DecodeSchemas(key, payload)(w)
		return func(ctx context.Context, records []opencdc.Record) (int, error) {
			return decode(schema.NewContext(ctx, codecs), records)
		}
	})
}

func limitWith(perSecond float64, burst int) func(writer) writer {
	return wrapWriter(LimitRate(perSecond, burst))
}

// encodeWith wraps a source that reads one record at a time, or many with
// ReadBatch, in the schema encoding, with the schemas of reg in the
// context of every read.
func encodeWith(reg schema.Registry, subjects Subjects) func(any) reader {
	codecs := schema.NewCodecs(reg)
	return func(src any) reader {
		var read Read
		switch s := src.(type) {
		case interface {
			ReadBatch(context.Context, int) ([]opencdc.Record, error)
		}:
			read = s.ReadBatch
		case interface {
			Read(context.Context) (opencdc.Record, error)
		}:
			read = func(ctx context.Context, _ int) ([]opencdc.Record, error) {
				rec, err := s.Read(ctx)
				if err != nil {
					return nil, err
				}
				return []opencdc.Record{rec}, nil
			}
		}
		encode := EncodeSchemas(subjects)(read)
		return reader{func(ctx context.Context, max int) ([]opencdc.Record, error) {
			return encode(schema.NewContext(ctx, codecs), max)
		}}
	}
}

// base is a destination that writes every record.
type base struct{}

func (base) Open(context.Context) error                               { return nil }
func (base) Write(_ context.Context, r []opencdc.Record) (int, error) { return len(r), nil }
func (base) Teardown(context.Context) error                           { return nil }
