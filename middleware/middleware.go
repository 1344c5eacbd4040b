package middleware

import (
	"context"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/connkit/connkit/internal/schema"
)

// Write is a destination's Write call, with its contract: it returns how
// many leading records were written, and an error if not all were.
// Destination middleware wrap it.
type Write func(ctx context.Context, records []opencdc.Record) (int, error)

// Read is a source's read call: it returns between 1 and max records, or
// an error. Source middleware wrap it.
type Read func(ctx context.Context, max int) ([]opencdc.Record, error)

// Env is what middleware may take from the plugin it runs in.
type Env struct {
	// Schemas is Conduit's schema service; nil outside a plugin, where the
	// process's in-memory registry serves (see schema.FromContext).
	Schemas schema.Registry
	// ConnectorID is Conduit's ID for the connector; empty outside Conduit.
	ConnectorID string
}

// schemas returns the registry middleware uses: the plugin's, or outside a
// plugin the process's in-memory one.
func (e Env) schemas() schema.Registry {
	if e.Schemas != nil {
		return e.Schemas
	}
	return schema.FromContext(context.Background())
}
