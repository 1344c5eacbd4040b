package host

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/conduitio/conduit-connector-protocol/pconnutils"
	"github.com/connkit/connkit/internal/schema"
	"github.com/matryer/is"
)

// tokens is a registry that remembers the connector token of each call.
type tokens struct {
	schema.Registry
	mu   sync.Mutex
	seen []string
}

func (r *tokens) note(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, pconnutils.ConnectorTokenFromContext(ctx))
}

func (r *tokens) Create(ctx context.Context, subject string, typ schema.Type, text []byte) (schema.Schema, error) {
	r.note(ctx)
	return r.Registry.Create(ctx, subject, typ, text)
}

func (r *tokens) Get(ctx context.Context, subject string, version int) (schema.Schema, error) {
	r.note(ctx)
	return r.Registry.Get(ctx, subject, version)
}

// ServeSchemas serves the registry it is given, and each call reaches it
// with the token the client presented.
func TestServeSchemas(t *testing.T) {
	is := is.New(t)
	reg := &tokens{Registry: schema.NewInMemory()}
	svc, err := ServeSchemas(reg)
	is.NoErr(err)
	defer svc.Stop()
	c, err := schema.Dial(svc.Target(), "the-token")
	is.NoErr(err)
	defer c.Close()
	created, err := c.Create(t.Context(), "s", schema.TypeAvro, []byte(`{"type":"record","name":"r","fields":[{"name":"a","type":"long"}]}`))
	is.NoErr(err)
	got, err := c.Get(t.Context(), "s", created.Version)
	is.NoErr(err)
	is.Equal(got.Bytes, created.Bytes)
	_, err = c.Get(t.Context(), "missing", 1)
	is.True(errors.Is(err, schema.ErrSubjectNotFound))
	is.Equal(err.Error(), `schema subject "missing" version 1: schema subject not found`) // as from Conduit: named once
	is.Equal(reg.seen, []string{"the-token", "the-token", "the-token"})
}
