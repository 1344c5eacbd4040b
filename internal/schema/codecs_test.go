package schema

import (
	"time"

	"context"
	"errors"
	"testing"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/matryer/is"
)

func TestCodecsGet(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	back := newCounting()
	s, err := back.Registry.Create(ctx, "s", TypeAvro, []byte(textA))
	is.NoErr(err)
	codecs := NewCodecs(back)

	c1, err := codecs.Get(ctx, "s", s.Version)
	is.NoErr(err)
	c2, err := codecs.Get(ctx, "s", s.Version)
	is.NoErr(err)
	is.Equal(c1, c2) // parsed once
	_, gets := back.counts()
	is.Equal(gets, 1)

	_, err = codecs.Get(ctx, "s", 9)
	is.True(errors.Is(err, ErrVersionNotFound))
	_, err = codecs.Get(ctx, "s", 9)
	is.True(errors.Is(err, ErrVersionNotFound))
	_, gets = back.counts()
	is.Equal(gets, 3) // failures are not kept
}

func TestCodecsForData(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	back := newCounting()
	codecs := NewCodecs(back)

	d := opencdc.StructuredData{"id": int64(1), "name": "x"}
	s1, c1, err := codecs.ForData(ctx, "payload", d)
	is.NoErr(err)
	is.Equal(s1.Subject, "payload")
	is.Equal(s1.Version, 1)
	s2, c2, err := codecs.ForData(ctx, "payload", opencdc.StructuredData{"id": int64(2), "name": "y"})
	is.NoErr(err)
	is.Equal(s2, s1)
	is.Equal(c2, c1)

	// a new shape is a new version
	s3, _, err := codecs.ForData(ctx, "payload", opencdc.StructuredData{"id": int64(1)})
	is.NoErr(err)
	is.Equal(s3.Version, 2)
	creates, _ := back.counts()
	is.Equal(creates, 2)

	// the codec registered answers Get without asking the registry
	c, err := codecs.Get(ctx, "payload", 1)
	is.NoErr(err)
	is.Equal(c, c1)
	_, gets := back.counts()
	is.Equal(gets, 0)

	b, err := c1.Encode(d)
	is.NoErr(err)
	got, err := c.Decode(b)
	is.NoErr(err)
	is.Equal(got, d)

	_, _, err = codecs.ForData(ctx, "payload", opencdc.StructuredData{"u": uint64(1)})
	is.True(err != nil)
}

// Whichever path ForData takes, it answers what extraction would.
func TestCodecsForDataShapes(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	codecs := NewCodecs(NewInMemory())
	ref := NewCodecs(NewInMemory()) // sees each record afresh
	at := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	records := []opencdc.StructuredData{
		{"id": int64(1), "name": "a", "at": at, "raw": []byte{1}, "n": nil},
		{"id": int64(2), "name": "b", "at": at, "raw": []byte{2}, "n": nil},
		{"id": int64(3), "name": "c", "at": at, "raw": []byte{3}, "n": "now set"},
		{"id": int64(4), "name": "d", "at": at, "raw": []byte{4}, "n": nil},
		{"id": 5, "name": "e", "at": at, "raw": []byte{5}, "n": nil},
		{"id": int32(6), "name": "f", "at": at, "raw": []byte{6}, "n": nil},
		{"id": int64(7), "name": "g", "at": at, "raw": []byte{7}},
		{"id": int64(8), "name": "h", "at": at, "raw": []byte{8}, "other": nil},
		{"id": int64(9), "list": []any{int64(1)}},
		{"id": int64(9), "list": []any{"x"}},
		{"id": int64(10), "name": "j", "at": at, "raw": []byte{9}, "n": nil},
	}
	for _, d := range records {
		s, c, err := codecs.ForData(ctx, "p", d)
		is.NoErr(err)
		text, err := Extract(d)
		is.NoErr(err)
		is.Equal(string(s.Bytes), string(text))
		is.Equal(c.Schema(), s)
		want, _, err := ref.ForData(ctx, "p", d)
		is.NoErr(err)
		is.Equal(s.Version, want.Version)
	}
}
