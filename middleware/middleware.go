package middleware

import (
	"context"

	"github.com/conduitio/conduit-commons/opencdc"
)

// Write is a destination's Write call, with its contract: it returns how
// many leading records were written, and an error if not all were.
// Destination middleware wrap it.
type Write func(ctx context.Context, records []opencdc.Record) (int, error)

// Read is a source's read call: it returns between 1 and max records, or
// an error. Source middleware wrap it.
type Read func(ctx context.Context, max int) ([]opencdc.Record, error)
