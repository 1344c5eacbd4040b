package middleware

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/connkit/connkit/sdk/schema"
)

// SchemaDecoding is the schema settings for destinations, with the
// incumbent Conduit SDK's parameters: a record whose metadata names a
// schema for its key or payload is decoded to structured data before Write.
type SchemaDecoding struct {
	Payload bool `param:"sdk.schema.extract.payload.enabled" desc:"Whether to decode the record payload with the schema its metadata names (opencdc.payload.schema.subject and .version)."`
	Key     bool `param:"sdk.schema.extract.key.enabled" desc:"Whether to decode the record key with the schema its metadata names (opencdc.key.schema.subject and .version)."`
}

// ForDestination returns [DecodeSchemas] with these settings.
func (s SchemaDecoding) ForDestination(env Env) (Middleware[Destination], error) {
	return DecodeSchemas(env.schemas(), s.Key, s.Payload), nil
}

// DecodeSchemas returns middleware that decodes, before Write, every raw
// key (with key set) and payload (with payload set, both before and after)
// whose record names its schema in metadata, with that schema from reg.
// Data that is already structured, empty raw data the schema cannot decode
// (nil raw data arrives empty), and records that name no schema, pass
// unchanged. A record that cannot be decoded is not written: the records
// before it are, and Write returns an error naming its position, the
// subject and the version. The input slice is never modified.
func DecodeSchemas(reg schema.Registry, key, payload bool) Middleware[Destination] {
	return func(d Destination) Destination {
		if !key && !payload {
			return d
		}
		return &decoding{Destination: d, codecs: schema.NewCodecs(reg), key: key, payload: payload}
	}
}

type decoding struct {
	Destination
	codecs       *schema.Codecs
	key, payload bool
}

func (d *decoding) Unwrap() Destination { return d.Destination }

func (d *decoding) Write(ctx context.Context, records []opencdc.Record) (int, error) {
	var decoded []opencdc.Record // a copy, made at the first record that changes
	var keys, payloads lastCodec
	for i := range records {
		rec, changed, err := d.decode(ctx, records[i], &keys, &payloads)
		if err != nil {
			err = fmt.Errorf("record %d (position %q): %w", i, records[i].Position, err)
			if i == 0 {
				return 0, err
			}
			out := records[:i:i]
			if decoded != nil {
				out = decoded[:i:i]
			}
			n, werr := d.Destination.Write(ctx, out)
			if werr != nil || n < i {
				return n, werr
			}
			return i, err
		}
		if changed && decoded == nil {
			decoded = slices.Clone(records)
		}
		if decoded != nil {
			decoded[i] = rec
		}
	}
	if decoded == nil {
		return d.Destination.Write(ctx, records)
	}
	return d.Destination.Write(ctx, decoded)
}

func (d *decoding) decode(ctx context.Context, rec opencdc.Record, keys, payloads *lastCodec) (opencdc.Record, bool, error) {
	changed := false
	if d.key {
		if raw, ok := rec.Key.(opencdc.RawData); ok {
			c, err := d.codec(ctx, rec.Metadata, opencdc.MetadataKeySchemaSubject, opencdc.MetadataKeySchemaVersion, keys)
			if err != nil {
				return rec, false, fmt.Errorf("key: %w", err)
			}
			if c != nil {
				v, ok, err := decodeData(c, raw)
				if err != nil {
					return rec, false, fmt.Errorf("decode the key: %w", err)
				}
				if ok {
					rec.Key, changed = v, true
				}
			}
		}
	}
	if d.payload {
		before, isBefore := rec.Payload.Before.(opencdc.RawData)
		after, isAfter := rec.Payload.After.(opencdc.RawData)
		if isBefore || isAfter {
			c, err := d.codec(ctx, rec.Metadata, opencdc.MetadataPayloadSchemaSubject, opencdc.MetadataPayloadSchemaVersion, payloads)
			if err != nil {
				return rec, false, fmt.Errorf("payload: %w", err)
			}
			if c != nil {
				if isBefore {
					v, ok, err := decodeData(c, before)
					if err != nil {
						return rec, false, fmt.Errorf("decode payload.before: %w", err)
					}
					if ok {
						rec.Payload.Before, changed = v, true
					}
				}
				if isAfter {
					v, ok, err := decodeData(c, after)
					if err != nil {
						return rec, false, fmt.Errorf("decode payload.after: %w", err)
					}
					if ok {
						rec.Payload.After, changed = v, true
					}
				}
			}
		}
	}
	return rec, changed, nil
}

// decodeData decodes raw with c, and reports whether there was a value to
// decode. Empty raw data that c cannot decode holds none: a source's nil
// raw data arrives empty (the wire cannot tell them apart) beside a
// structured side that the metadata's schema is for. It is left as it is.
// Empty data can still be a value, of a record without fields.
func decodeData(c *schema.Codec, raw opencdc.RawData) (opencdc.StructuredData, bool, error) {
	v, err := c.Decode(raw)
	if err != nil {
		if len(raw) == 0 {
			return nil, false, nil
		}
		return nil, false, err
	}
	return v, true, nil
}

// codec returns the codec of the schema named by the metadata fields
// subjectKey and versionKey, or nil when neither is set; last is the one
// named before.
func (d *decoding) codec(ctx context.Context, m opencdc.Metadata, subjectKey, versionKey string, last *lastCodec) (*schema.Codec, error) {
	subject, hasSubject := m[subjectKey]
	version, hasVersion := m[versionKey]
	if !hasSubject && !hasVersion {
		return nil, nil
	}
	if last.codec != nil && subject == last.subject && version == last.version {
		return last.codec, nil
	}
	v, err := strconv.Atoi(version)
	if !hasSubject || subject == "" || err != nil || v < 1 {
		return nil, fmt.Errorf("metadata %s=%q and %s=%q do not name a schema: expected a subject and a version of 1 or more", subjectKey, subject, versionKey, version)
	}
	c, err := d.codecs.Get(ctx, subject, v)
	if err == nil {
		*last = lastCodec{subject: subject, version: version, codec: c}
	}
	return c, err
}

// lastCodec is the codec of the schema the previous record of a batch named,
// with the metadata that named it: the records of a batch mostly name one
// schema, which is then parsed from metadata and looked up once.
type lastCodec struct {
	subject, version string
	codec            *schema.Codec
}

// SchemaEncoding is the schema settings for sources, with the incumbent
// Conduit SDK's parameters: structured keys and payloads get a schema
// extracted, registered once per shape, and leave the plugin as Avro with
// metadata that names the schema.
type SchemaEncoding struct {
	Type           string `param:"sdk.schema.extract.type" validate:"inclusion=avro" desc:"The type of schema extracted from structured data."`
	Payload        bool   `param:"sdk.schema.extract.payload.enabled" desc:"Whether to extract a schema from structured payloads and encode them with it."`
	PayloadSubject string `param:"sdk.schema.extract.payload.subject" desc:"The subject of payload schemas; a record's opencdc.collection, if any, is put before it with a dot."`
	Key            bool   `param:"sdk.schema.extract.key.enabled" desc:"Whether to extract a schema from structured keys and encode them with it."`
	KeySubject     string `param:"sdk.schema.extract.key.subject" desc:"The subject of key schemas; a record's opencdc.collection, if any, is put before it with a dot."`
	Context        bool   `param:"sdk.schema.context.enabled" desc:"Whether subjects are registered in a schema context, so that connectors cannot clash; without one, subjects are used as they are."`
	ContextName    string `param:"sdk.schema.context.name" desc:"The schema context; empty means the connector's ID."`
}

// ForSource returns [EncodeSchemas] with these settings.
func (s SchemaEncoding) ForSource(env Env) (Middleware[Source], error) {
	opts := EncodeOptions{}
	if s.Key {
		opts.KeySubject = s.KeySubject
	}
	if s.Payload {
		opts.PayloadSubject = s.PayloadSubject
	}
	if s.Context {
		opts.Context = s.ContextName
		if opts.Context == "" {
			opts.Context = env.ConnectorID
		}
	}
	return EncodeSchemas(env.schemas(), opts), nil
}

// EncodeOptions say what [EncodeSchemas] encodes.
type EncodeOptions struct {
	KeySubject     string // the subject of key schemas; empty: keys are not encoded
	PayloadSubject string // the subject of payload schemas; empty: payloads are not encoded
	Context        string // a schema context the subjects are registered in; empty: none
}

// EncodeSchemas returns middleware that encodes the structured keys and
// payloads a source reads as Avro. A record whose metadata already names a
// schema is encoded with it; otherwise a schema is extracted from the data,
// registered with reg under the subject (prefixed with the record's
// collection and a dot, and with the context and a colon), once per shape,
// and named in the record's metadata. Raw data passes unchanged. A record
// that cannot be encoded fails the read with an error naming its position.
func EncodeSchemas(reg schema.Registry, opts EncodeOptions) Middleware[Source] {
	return func(s Source) Source {
		if opts.KeySubject == "" && opts.PayloadSubject == "" {
			return s
		}
		e := &encoding{Source: s, codecs: schema.NewCodecs(reg), opts: opts}
		e.reader, _ = Find[BatchReader](s)
		return e
	}
}

type encoding struct {
	Source
	reader BatchReader // nil if the source reads one record at a time
	codecs *schema.Codecs
	opts   EncodeOptions
}

func (e *encoding) Unwrap() Source { return e.Source }

func (e *encoding) Read(ctx context.Context) (opencdc.Record, error) {
	rec, err := e.Source.Read(ctx)
	if err != nil {
		return rec, err
	}
	if err := e.encode(ctx, &rec, &subjects{}); err != nil {
		return opencdc.Record{}, fmt.Errorf("record at position %q: %w", rec.Position, err)
	}
	return rec, nil
}

// ReadBatch reads with the source's ReadBatch, or with one Read when it has
// none, so that no record leaves the source unencoded.
func (e *encoding) ReadBatch(ctx context.Context, max int) ([]opencdc.Record, error) {
	if e.reader == nil {
		rec, err := e.Read(ctx)
		if err != nil {
			return nil, err
		}
		return []opencdc.Record{rec}, nil
	}
	recs, err := e.reader.ReadBatch(ctx, max)
	var subs subjects
	for i := range recs {
		if eerr := e.encode(ctx, &recs[i], &subs); eerr != nil {
			return nil, errors.Join(fmt.Errorf("record at position %q: %w", recs[i].Position, eerr), err)
		}
	}
	return recs, err
}

func (e *encoding) encode(ctx context.Context, rec *opencdc.Record, subs *subjects) error {
	if e.opts.KeySubject != "" {
		if key, ok := rec.Key.(opencdc.StructuredData); ok {
			c, err := e.codec(ctx, rec, key, e.opts.KeySubject, &subs.key, opencdc.MetadataKeySchemaSubject, opencdc.MetadataKeySchemaVersion)
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
	if e.opts.PayloadSubject != "" {
		before, isBefore := rec.Payload.Before.(opencdc.StructuredData)
		after, isAfter := rec.Payload.After.(opencdc.StructuredData)
		if !isBefore && !isAfter {
			return nil
		}
		shape := after
		if !isAfter {
			shape = before
		}
		c, err := e.codec(ctx, rec, shape, e.opts.PayloadSubject, &subs.payload, opencdc.MetadataPayloadSchemaSubject, opencdc.MetadataPayloadSchemaVersion)
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
	if e.opts.Context != "" {
		base = e.opts.Context + ":" + base
	}
	return base
}

// schemas returns the registry middleware uses: the plugin's, or outside a
// plugin the process's in-memory one.
func (e Env) schemas() schema.Registry {
	if e.Schemas != nil {
		return e.Schemas
	}
	return schema.FromContext(context.Background())
}
