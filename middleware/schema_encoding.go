package middleware

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/connkit/connkit/internal/schema"
)

// SchemaEncoding is the schema settings for sources, with the incumbent
// Conduit SDK's parameters: structured keys and payloads get a schema
// extracted, registered once per shape, and leave the plugin as Avro with
// metadata that names the schema. The defaults are [DefaultSchemaEncoding]'s.
type SchemaEncoding struct {
	Type           string `param:"sdk.schema.extract.type" validate:"inclusion=avro" desc:"The type of schema extracted from structured data."`
	Payload        bool   `param:"sdk.schema.extract.payload.enabled" desc:"Whether to extract a schema from structured payloads and encode them with it."`
	PayloadSubject string `param:"sdk.schema.extract.payload.subject" desc:"The subject of payload schemas; a record's opencdc.collection, if any, is put before it with a dot."`
	Key            bool   `param:"sdk.schema.extract.key.enabled" desc:"Whether to extract a schema from structured keys and encode them with it."`
	KeySubject     string `param:"sdk.schema.extract.key.subject" desc:"The subject of key schemas; a record's opencdc.collection, if any, is put before it with a dot."`
	Context        bool   `param:"sdk.schema.context.enabled" desc:"Whether subjects are registered in a schema context, so that connectors cannot clash; without one, subjects are used as they are."`
	ContextName    string `param:"sdk.schema.context.name" desc:"The schema context; empty means the connector's ID."`
}

// DefaultSchemaEncoding returns the incumbent Conduit SDK's defaults, which
// a source has unless its connector gives others: Avro schemas for both
// keys and payloads, under the subjects "key" and "payload", in a schema
// context named after the connector's ID. To change one setting, change it
// in this value.
func DefaultSchemaEncoding() SchemaEncoding {
	return SchemaEncoding{Type: "avro", Payload: true, PayloadSubject: "payload", Key: true, KeySubject: "key", Context: true}
}

// Wrap returns the wrapper these settings describe (see [encodeSchemas]),
// with the schemas and connector ID of env; nil when neither Key nor
// Payload is set.
func (s SchemaEncoding) Wrap(env Env) (func(Read) Read, error) {
	opts := encodeOptions{}
	if s.Key {
		opts.keySubject = s.KeySubject
	}
	if s.Payload {
		opts.payloadSubject = s.PayloadSubject
	}
	if opts.keySubject == "" && opts.payloadSubject == "" {
		return nil, nil
	}
	if s.Context {
		opts.context = s.ContextName
		if opts.context == "" {
			opts.context = env.ConnectorID
		}
	}
	return encodeSchemas(env.schemas(), opts), nil
}

// encodeOptions say what [encodeSchemas] encodes.
type encodeOptions struct {
	keySubject     string // the subject of key schemas; empty: keys are not encoded
	payloadSubject string // the subject of payload schemas; empty: payloads are not encoded
	context        string // a schema context the subjects are registered in; empty: none
}

// encodeSchemas encodes the structured keys and payloads a source reads as
// Avro. A record whose metadata already names a schema is encoded with it;
// otherwise a schema is extracted from the data, registered with reg under
// the subject (prefixed with the record's collection and a dot, and with
// the context and a colon), once per shape, and named in the record's
// metadata. Raw data passes unchanged. A record that cannot be encoded
// fails the read with an error naming its position; the records read with
// it are not lost, as the source reads them again after a restart.
func encodeSchemas(reg schema.Registry, opts encodeOptions) func(Read) Read {
	return func(read Read) Read {
		e := &encoding{codecs: schema.NewCodecs(reg), opts: opts}
		return func(ctx context.Context, max int) ([]opencdc.Record, error) {
			recs, err := read(ctx, max)
			var subs subjects
			for i := range recs {
				if eerr := e.encode(ctx, &recs[i], &subs); eerr != nil {
					return nil, errors.Join(fmt.Errorf("record at position %q: %w", recs[i].Position, eerr), err)
				}
			}
			return recs, err
		}
	}
}

type encoding struct {
	codecs *schema.Codecs
	opts   encodeOptions
}

func (e *encoding) encode(ctx context.Context, rec *opencdc.Record, subs *subjects) error {
	if e.opts.keySubject != "" {
		if key, ok := rec.Key.(opencdc.StructuredData); ok {
			c, err := e.codec(ctx, rec, key, e.opts.keySubject, &subs.key, opencdc.MetadataKeySchemaSubject, opencdc.MetadataKeySchemaVersion)
			if err != nil {
				return fmt.Errorf("key: %w", err)
			}
			b, err := c.Encode(key)
			if err != nil {
				return fmt.Errorf("encode the key: %w", err)
			}
			rec.Key = opencdc.RawData(b)
		}
	}
	if e.opts.payloadSubject != "" {
		before, isBefore := rec.Payload.Before.(opencdc.StructuredData)
		after, isAfter := rec.Payload.After.(opencdc.StructuredData)
		if !isBefore && !isAfter {
			return nil
		}
		shape := after
		if !isAfter {
			shape = before
		}
		c, err := e.codec(ctx, rec, shape, e.opts.payloadSubject, &subs.payload, opencdc.MetadataPayloadSchemaSubject, opencdc.MetadataPayloadSchemaVersion)
		if err != nil {
			return fmt.Errorf("payload: %w", err)
		}
		if isBefore {
			b, err := c.Encode(before)
			if err != nil {
				return fmt.Errorf("encode payload.before: %w", err)
			}
			rec.Payload.Before = opencdc.RawData(b)
		}
		if isAfter {
			b, err := c.Encode(after)
			if err != nil {
				return fmt.Errorf("encode payload.after: %w", err)
			}
			rec.Payload.After = opencdc.RawData(b)
		}
	}
	return nil
}

// codec returns the codec for data: the schema the record's metadata names,
// or one extracted from data and registered under base (see
// [encoding.subject]), which the metadata then names; sub is the subject
// of the batch's previous record.
func (e *encoding) codec(ctx context.Context, rec *opencdc.Record, data opencdc.StructuredData, base string, sub *subject, subjectKey, versionKey string) (*schema.Codec, error) {
	if named, hasSubject := rec.Metadata[subjectKey]; hasSubject {
		v, err := strconv.Atoi(rec.Metadata[versionKey])
		if named == "" || err != nil || v < 1 {
			return nil, fmt.Errorf("metadata %s=%q and %s=%q do not name a schema: expected a subject and a version of 1 or more", subjectKey, named, versionKey, rec.Metadata[versionKey])
		}
		return e.codecs.Get(ctx, named, v)
	}
	collection := rec.Metadata[opencdc.MetadataCollection]
	if !sub.made || collection != sub.collection {
		*sub = subject{made: true, collection: collection, subject: e.subject(collection, base)}
	}
	s, c, err := e.codecs.ForData(ctx, sub.subject, data)
	if err != nil {
		return nil, err
	}
	if rec.Metadata == nil {
		rec.Metadata = opencdc.Metadata{}
	}
	rec.Metadata[subjectKey] = s.Subject
	rec.Metadata[versionKey] = strconv.Itoa(s.Version)
	return c, nil
}

// subject is the subject of the schemas of a batch's records of one
// collection: a batch mostly holds one, so its subject is made once.
type subject struct {
	made                bool
	collection, subject string
}

// subjects are the subjects of a batch's keys and payloads.
type subjects struct{ key, payload subject }

// subject returns the subject of the schemas of a collection's records:
// base, prefixed with the collection and a dot, and the context and a colon.
func (e *encoding) subject(collection, base string) string {
	if collection != "" {
		base = collection + "." + base
	}
	if e.opts.context != "" {
		base = e.opts.context + ":" + base
	}
	return base
}
