package schema

import (
	"errors"
	"fmt"
	"sync"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/hamba/avro/v2"
)

// Codec decodes and encodes structured data with one Avro schema. It is
// safe for concurrent use.
type Codec struct {
	schema Schema
	avro   avro.Schema
	// wrapped is set when some union's values travel through hamba/avro
	// wrapped in a map (see unwrapUnions).
	wrapped bool
	// api is avroConfig for this codec alone: hamba/avro keeps the decoders
	// and encoders it builds for a schema in its configuration, for good,
	// so a configuration shared by every codec would grow with every schema
	// a process sees. decoders read with it.
	api      avro.API
	decoders sync.Pool // of *decoder
}

// avroConfig is hamba/avro's default configuration, the one conduit-commons'
// serde uses, with a bound on the elements one array may claim, so that
// malformed input cannot make Decode allocate without limit. Strings and
// bytes keep the default bound of 1 MiB a value, the one Conduit and its SDK
// decode with.
var avroConfig = avro.Config{MaxSliceAllocSize: maxArrayElements}

// maxArrayElements is the most elements Decode accepts in one array.
const maxArrayElements = 1 << 20

// decoder is a reader and the place it decodes into, pooled together so
// that a Decode allocates nothing of its own for the result's address.
type decoder struct {
	r   *avro.Reader
	out opencdc.StructuredData
}

// NewCodec parses s, which must be an Avro schema of a record (or a map),
// the shapes structured data takes.
func NewCodec(s Schema) (*Codec, error) {
	if s.Type != TypeAvro {
		return nil, fmt.Errorf("schema subject %q version %d: type %v: %w", s.Subject, s.Version, s.Type, errors.ErrUnsupported)
	}
	parsed, err := avro.ParseBytesWithCache(s.Bytes, "", &avro.SchemaCache{})
	if err != nil {
		return nil, fmt.Errorf("schema subject %q version %d: %w: %w", s.Subject, s.Version, ErrInvalidSchema, err)
	}
	if t := parsed.Type(); t != avro.Record && t != avro.Map {
		return nil, fmt.Errorf("schema subject %q version %d: top-level type %s, want record or map: %w", s.Subject, s.Version, t, ErrInvalidSchema)
	}
	c := &Codec{schema: s, avro: parsed, wrapped: hasWrappedUnion(parsed, map[string]bool{}), api: avroConfig.Freeze()}
	c.decoders.New = func() any { return &decoder{r: avro.NewReader(nil, 0, avro.WithReaderConfig(c.api))} }
	return c, nil
}

// Schema returns the schema c was made from.
func (c *Codec) Schema() Schema { return c.schema }

// Decode decodes b, which must hold exactly one value written with c's
// schema, into the Go types listed in the package documentation. The
// result does not share memory with b. An array claiming more than 2^20
// elements, or a string or bytes value over 1 MiB, is an error.
func (c *Codec) Decode(b []byte) (opencdc.StructuredData, error) {
	dec := c.decoders.Get().(*decoder)
	defer c.decoders.Put(dec)
	r := dec.r
	r.Reset(b)
	r.Error = nil
	r.ReadVal(c.avro, &dec.out)
	out := dec.out
	dec.out = nil
	if err := r.Error; err != nil {
		return nil, fmt.Errorf("decode with schema subject %q version %d: %w", c.schema.Subject, c.schema.Version, err)
	}
	var extra [1]byte
	if r.Read(extra[:]); r.Error == nil {
		return nil, fmt.Errorf("decode with schema subject %q version %d: trailing bytes after the value", c.schema.Subject, c.schema.Version)
	}
	if c.wrapped {
		unwrapUnions(c.avro, out)
	}
	return out, nil
}

// Encode encodes d with c's schema; every field the schema declares without
// a default must be present. d is neither modified nor retained.
func (c *Codec) Encode(d opencdc.StructuredData) ([]byte, error) {
	var v any = d
	if c.wrapped {
		v = wrapUnions(c.avro, d)
	}
	b, err := c.api.Marshal(c.avro, v)
	if err != nil {
		return nil, fmt.Errorf("encode with schema subject %q version %d: %w", c.schema.Subject, c.schema.Version, err)
	}
	return b, nil
}
