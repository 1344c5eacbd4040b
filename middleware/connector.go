package middleware

import (
	"context"

	"github.com/conduitio/conduit-commons/opencdc"
)

// The connector interfaces are declared here, once; package sdk gives them
// to connector authors under the same names.

// Source reads records from a system.
//
// Open is called once, with the position of the last record Conduit
// acknowledged (nil on a first start); the source resumes right after it.
// Read blocks until it has a record or ctx is done; when ctx is done it
// returns ctx.Err() and no record. Every record must carry a non-empty
// position that is unique within the source. Teardown releases what Open
// acquired; it may be called without Open.
//
// A source that wants to know which records Conduit has durably processed
// implements [Acker].
type Source interface {
	Open(ctx context.Context, from opencdc.Position) error
	Read(ctx context.Context) (opencdc.Record, error)
	Teardown(ctx context.Context) error
}

// Destination writes records to a system.
//
// Open is called once before the first Write. Teardown releases what Open
// acquired; it may be called without Open.
//
// Write writes records in order and returns the number of leading records
// that are durably written (0 <= n <= len(records)). It must return a non-nil
// error if n < len(records). It must not modify the slice or retain it, nor
// the records, after it returns. The SDK acknowledges records[:n] and
// negatively acknowledges records[n:] with err; a Write that breaks this
// contract has all of its unconfirmed records nacked with an error that says
// how. Write is never called concurrently with itself.
type Destination interface {
	Open(ctx context.Context) error
	Write(ctx context.Context, records []opencdc.Record) (n int, err error)
	Teardown(ctx context.Context) error
}

// Acker is implemented by sources that need acknowledgements. Ack is called
// once per record, in the order the records were read, possibly while Read
// runs concurrently.
type Acker interface {
	Ack(ctx context.Context, position opencdc.Position) error
}

// BatchReader is implemented by sources that can read several records at
// once, which is faster than one Read per record. ReadBatch returns between
// 1 and max records, blocking like Read until it has at least one; when ctx
// is done it returns ctx.Err() and no records. The SDK calls it instead of
// Read.
type BatchReader interface {
	ReadBatch(ctx context.Context, max int) ([]opencdc.Record, error)
}

// The lifecycle hooks are optional interfaces a [Source] or [Destination] may
// implement. Conduit calls them when a connector is created, when its
// configuration changes, and when it is deleted, before Open. A connector
// that does not implement a hook is answered with success on its behalf.
type (
	// CreatedHook runs once when the connector is created.
	CreatedHook interface {
		OnCreated(ctx context.Context) error
	}
	// UpdatedHook runs when the connector's configuration changed; previous
	// is the raw configuration it had before.
	UpdatedHook interface {
		OnUpdated(ctx context.Context, previous map[string]string) error
	}
	// DeletedHook runs when the connector is deleted. It may run without
	// Open ever having been called.
	DeletedHook interface {
		OnDeleted(ctx context.Context) error
	}
)
