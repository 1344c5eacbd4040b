package connector

import "context"

// Source reads records from a system.
//
// Open is called once, with the position of the last record Conduit
// acknowledged (nil on a first start); the source resumes right after it.
// Read blocks until it has a record or ctx is done; when ctx is done it
// returns ctx.Err() and no record. Every record must carry a non-empty
// position that is unique within the source: Conduit stores the last one
// acknowledged and hands it back to Open after a restart. Teardown
// releases what Open acquired; it may be called without Open.
//
// A source that needs to know which records Conduit has durably processed
// implements [Acker]; one that can read many records at once implements
// [BatchReader].
type Source interface {
	Open(ctx context.Context, from Position) error
	Read(ctx context.Context) (Record, error)
	Teardown(ctx context.Context) error
}

// Acker is implemented by sources that need acknowledgements. Ack is called
// once per record, in the order the records were read, possibly while Read
// runs concurrently. An error fails the pipeline.
type Acker interface {
	Ack(ctx context.Context, position Position) error
}

// BatchReader is implemented by sources that can read several records at
// once, which is faster than one Read per record. ReadBatch returns between
// 1 and max records, blocking like Read until it has at least one; when ctx
// is done it returns ctx.Err() and no records. The SDK calls it instead of
// Read.
type BatchReader interface {
	ReadBatch(ctx context.Context, max int) ([]Record, error)
}
