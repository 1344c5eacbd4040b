package schema

import "context"

// Cached returns a [Registry] that asks r for each schema once: Get results
// are kept by subject and version, Create results by subject, type and text
// (registered schemas never change), up to [CacheSize] of each, the ones
// most used, and a schema Create returns also answers Get. A failed call is not kept.
// Concurrent calls for the same missing entry make one call to r and share
// its result. Cached of a registry Cached returned is that registry.
func Cached(r Registry) Registry {
	if c, ok := r.(*cached); ok {
		return c
	}
	return &cached{r: r}
}

type cached struct {
	r       Registry
	gets    flights[getKey, Schema]
	creates flights[createKey, Schema]
}

type getKey struct {
	subject string
	version int
}

type createKey struct {
	subject string
	typ     Type
	text    string
}

func (c *cached) Create(ctx context.Context, subject string, typ Type, text []byte) (Schema, error) {
	return c.creates.get(ctx, createKey{subject, typ, string(text)}, func() (Schema, error) {
		s, err := c.r.Create(ctx, subject, typ, text)
		if err == nil {
			c.gets.put(getKey{s.Subject, s.Version}, s)
		}
		return s, err
	})
}

func (c *cached) Get(ctx context.Context, subject string, version int) (Schema, error) {
	return c.gets.get(ctx, getKey{subject, version}, func() (Schema, error) {
		return c.r.Get(ctx, subject, version)
	})
}
