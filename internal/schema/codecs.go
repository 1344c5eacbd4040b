package schema

import (
	"context"

	"github.com/conduitio/conduit-commons/opencdc"
)

// Codecs is a cache of [Codec]s for the schemas of one [Registry]. It parses
// each schema once and keeps up to [CacheSize] codecs of each kind, the
// ones most used. It is safe for concurrent use.
type Codecs struct {
	r        Registry
	versions flights[getKey, *Codec]
	shapes   flights[shapeKey, *Codec]
	last     flights[string, *shape] // per subject, the last flat shape ForData saw
}

type shapeKey struct {
	subject string
	text    string
}

// NewCodecs returns an empty cache fetching schemas from r.
func NewCodecs(r Registry) *Codecs {
	return &Codecs{r: r}
}

// Get returns the codec for the schema registered under subject with
// version. Errors are those of the registry's Get and of [NewCodec].
func (c *Codecs) Get(ctx context.Context, subject string, version int) (*Codec, error) {
	return c.versions.get(ctx, getKey{subject, version}, func() (*Codec, error) {
		s, err := c.r.Get(ctx, subject, version)
		if err != nil {
			return nil, err
		}
		return NewCodec(s)
	})
}

// ForData returns the schema for d's shape registered under subject, and its
// codec: the schema [Extract] derives from d, registered once per subject
// and text. A record whose fields are all scalars (nil, bool, numbers,
// strings, []byte, time.Time) with the same names and Go types as the
// previous such record for the subject skips extraction.
func (c *Codecs) ForData(ctx context.Context, subject string, d opencdc.StructuredData) (Schema, *Codec, error) {
	if last, ok := c.last.lookup(subject); ok && last.matches(d) {
		return last.schema, last.codec, nil
	}
	text, err := Extract(d)
	if err != nil {
		return Schema{}, nil, err
	}
	codec, err := c.shapes.get(ctx, shapeKey{subject, string(text)}, func() (*Codec, error) {
		s, err := c.r.Create(ctx, subject, TypeAvro, text)
		if err != nil {
			return nil, err
		}
		codec, err := NewCodec(s)
		if err != nil {
			return nil, err
		}
		c.versions.put(getKey{s.Subject, s.Version}, codec)
		return codec, nil
	})
	if err != nil {
		return Schema{}, nil, err
	}
	if types := flatShape(d); types != nil {
		c.last.set(subject, &shape{types: types, schema: codec.schema, codec: codec})
	}
	return codec.schema, codec, nil
}
