package middleware

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/connkit/connkit/internal/schema"
)

// DecodeSchemas decodes, before Write, every raw key (with key set) and
// payload (with payload set, both before and after) whose record names its
// schema in metadata, with that schema from the schema service: the
// sdk.schema.extract.key.enabled and .payload.enabled parameters of a
// destination. The schemas come from the codecs the plugin server puts in
// the context of every call (outside a plugin, an in-memory registry the
// process shares). Data that is already structured, empty raw data the
// schema cannot decode (nil raw data arrives empty), and records that name
// no schema, pass unchanged. A record that cannot be decoded is not
// written: the records before it are, and Write returns an error naming
// its position, the subject and the version. The input slice is never
// modified. With neither key nor payload set it returns Write unchanged.
func DecodeSchemas(key, payload bool) func(Write) Write {
	return func(write Write) Write {
		if !key && !payload {
			return write
		}
		d := &decoding{write: write, key: key, payload: payload}
		return d.Write
	}
}

type decoding struct {
	write        Write
	key, payload bool
}

func (d *decoding) Write(ctx context.Context, records []opencdc.Record) (int, error) {
	codecs := schema.FromContext(ctx)
	var decoded []opencdc.Record // a copy, made at the first record that changes
	var keys, payloads lastCodec
	for i := range records {
		rec, changed, err := d.decode(ctx, codecs, records[i], &keys, &payloads)
		if err != nil {
			err = fmt.Errorf("record %d (position %q): %w", i, records[i].Position, err)
			if i == 0 {
				return 0, err
			}
			out := records[:i:i]
			if decoded != nil {
				out = decoded[:i:i]
			}
			n, werr := d.write(ctx, out)
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
		return d.write(ctx, records)
	}
	return d.write(ctx, decoded)
}

// decode decodes the raw key and payload of rec that its metadata names a
// schema for, as d is set to, and reports whether anything changed.
func (d *decoding) decode(ctx context.Context, codecs *schema.Codecs, rec opencdc.Record, keys, payloads *lastCodec) (opencdc.Record, bool, error) {
	var key, before, after bool // decoded
	if _, raw := rec.Key.(opencdc.RawData); d.key && raw {
		c, err := codec(ctx, codecs, rec.Metadata, opencdc.MetadataKeySchemaSubject, opencdc.MetadataKeySchemaVersion, keys)
		if err != nil {
			return rec, false, fmt.Errorf("key: %w", err)
		}
		if rec.Key, key, err = decodeData(c, rec.Key, "the key"); err != nil {
			return rec, false, err
		}
	}
	_, rawBefore := rec.Payload.Before.(opencdc.RawData)
	_, rawAfter := rec.Payload.After.(opencdc.RawData)
	if d.payload && (rawBefore || rawAfter) {
		c, err := codec(ctx, codecs, rec.Metadata, opencdc.MetadataPayloadSchemaSubject, opencdc.MetadataPayloadSchemaVersion, payloads)
		if err != nil {
			return rec, false, fmt.Errorf("payload: %w", err)
		}
		if rec.Payload.Before, before, err = decodeData(c, rec.Payload.Before, "payload.before"); err != nil {
			return rec, false, err
		}
		if rec.Payload.After, after, err = decodeData(c, rec.Payload.After, "payload.after"); err != nil {
			return rec, false, err
		}
	}
	return rec, key || before || after, nil
}

// decodeData returns d decoded with c, a nil c meaning there is no schema,
// if d is raw data that holds a value, and whether it decoded. Empty raw
// data that c cannot decode holds none: a source's nil raw data arrives
// empty (the wire cannot tell them apart) beside a structured side that
// the metadata's schema is for. It is left as it is. Empty data can still
// be a value, of a record without fields.
func decodeData(c *schema.Codec, d opencdc.Data, name string) (opencdc.Data, bool, error) {
	raw, ok := d.(opencdc.RawData)
	if c == nil || !ok {
		return d, false, nil
	}
	v, err := c.Decode(raw)
	switch {
	case err != nil && len(raw) == 0:
		return d, false, nil
	case err != nil:
		return d, false, fmt.Errorf("decode %s: %w", name, err)
	}
	return v, true, nil
}

// codec returns the codec of the schema named by the metadata fields
// subjectKey and versionKey, or nil when neither is set; last is the one
// named before.
func codec(ctx context.Context, codecs *schema.Codecs, m opencdc.Metadata, subjectKey, versionKey string, last *lastCodec) (*schema.Codec, error) {
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
	c, err := codecs.Get(ctx, subject, v)
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
