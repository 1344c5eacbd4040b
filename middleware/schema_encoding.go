package middleware

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"strconv"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/connkit/connkit/internal/schema"
)

// Subjects say which of a source's structured keys and payloads
// [EncodeSchemas] encodes, and under which subjects it registers their
// schemas: the sdk.schema.extract.* and sdk.schema.context.* parameters of
// a source.
type Subjects struct {
	Key     string // the subject of key schemas; empty: keys are not encoded
	Payload string // the subject of payload schemas; empty: payloads are not encoded
	Context string // a schema context the subjects are registered in; empty: none
}

// EncodeSchemas encodes the structured keys and payloads a source reads as
// Avro. A record whose metadata already names a schema is encoded with it;
// otherwise a schema is extracted from the data and registered with the
// schema service under the subject (prefixed with the record's collection
// and a dot, and with the context and a colon), once per shape, and named
// in the record's metadata. The schema service is the one whose codecs the
// plugin server puts in the context of every call (outside a plugin, an
// in-memory registry the process shares). Raw data passes unchanged. A
// record that cannot be encoded fails the read with an error naming its
// position; the records read with it are not lost, as the source reads
// them again after a restart. With neither subject set it returns Read
// unchanged.
func EncodeSchemas(s Subjects) func(Read) Read {
	return func(read Read) Read {
		if s.Key == "" && s.Payload == "" {
			return read
		}
		e := &encoding{subjects: s}
		return func(ctx context.Context, max int) ([]opencdc.Record, error) {
			recs, err := read(ctx, max)
			codecs := schema.FromContext(ctx)
			var subs subjects
			for i := range recs {
				if eerr := e.encode(ctx, codecs, &recs[i], &subs); eerr != nil {
					return nil, errors.Join(fmt.Errorf("record at position %q: %w", recs[i].Position, eerr), err)
				}
			}
			return recs, err
		}
	}
}

type encoding struct {
	subjects Subjects
}

func (e *encoding) encode(ctx context.Context, codecs *schema.Codecs, rec *opencdc.Record, subs *subjects) error {
	if e.subjects.Key != "" {
		if key, ok := rec.Key.(opencdc.StructuredData); ok {
			c, err := e.codec(ctx, codecs, rec, key, e.subjects.Key, &subs.key, opencdc.MetadataKeySchemaSubject, opencdc.MetadataKeySchemaVersion)
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
	if e.subjects.Payload != "" {
		before, isBefore := rec.Payload.Before.(opencdc.StructuredData)
		after, isAfter := rec.Payload.After.(opencdc.StructuredData)
		if !isBefore && !isAfter {
			return nil
		}
		shape := after
		switch {
		case !isAfter:
			shape = before
		case isBefore:
			shape = payloadShape(before, after)
		}
		c, err := e.codec(ctx, codecs, rec, shape, e.subjects.Payload, &subs.payload, opencdc.MetadataPayloadSchemaSubject, opencdc.MetadataPayloadSchemaVersion)
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
func (e *encoding) codec(ctx context.Context, codecs *schema.Codecs, rec *opencdc.Record, data opencdc.StructuredData, base string, sub *subject, subjectKey, versionKey string) (*schema.Codec, error) {
	if named, hasSubject := rec.Metadata[subjectKey]; hasSubject {
		v, err := strconv.Atoi(rec.Metadata[versionKey])
		if named == "" || err != nil || v < 1 {
			return nil, fmt.Errorf("metadata %s=%q and %s=%q do not name a schema: expected a subject and a version of 1 or more", subjectKey, named, versionKey, rec.Metadata[versionKey])
		}
		return codecs.Get(ctx, named, v)
	}
	collection := rec.Metadata[opencdc.MetadataCollection]
	if !sub.made || collection != sub.collection {
		*sub = subject{made: true, collection: collection, subject: e.subject(collection, base)}
	}
	s, c, err := codecs.ForData(ctx, sub.subject, data)
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
	if e.subjects.Context != "" {
		base = e.subjects.Context + ":" + base
	}
	return base
}

// payloadShape returns the data a payload's schema is extracted from when
// it has both a before and an after, which one schema encodes: after, or,
// where a field is nil on one side only or on one side at all (a column
// set to or from NULL), a copy with that field of the other side's type
// made nullable, as a nil pointer of it, which the extractor takes for a
// nullable union.
func payloadShape(before, after opencdc.StructuredData) opencdc.StructuredData {
	var shape opencdc.StructuredData
	widen := func(name string, v any) {
		if shape == nil {
			shape = maps.Clone(after)
		}
		shape[name] = nullable(v)
	}
	for name, b := range before {
		switch a, inAfter := after[name]; {
		case !inAfter, a == nil && b != nil:
			widen(name, b)
		case a != nil && b == nil:
			widen(name, a)
		}
	}
	for name, a := range after {
		if _, inBefore := before[name]; !inBefore && a != nil {
			widen(name, a)
		}
	}
	if shape == nil {
		return after
	}
	return shape
}

// nullable returns a nil pointer of v's type, whose schema is v's made
// nullable; nil for nil, and v itself for maps, slices other than bytes, pointers and
// interfaces, whose schemas come from their elements.
func nullable(v any) any {
	t := reflect.TypeOf(v)
	if t == nil {
		return nil
	}
	switch k := t.Kind(); {
	case k == reflect.Slice && t.Elem().Kind() == reflect.Uint8: // bytes
	case k == reflect.Map, k == reflect.Slice, k == reflect.Pointer, k == reflect.Interface:
		return v
	}
	return reflect.Zero(reflect.PointerTo(t)).Interface()
}
