package connector

import "context"

// Destination writes records to a system.
//
// Open is called once, before the first Write. Teardown releases what Open
// acquired; it may be called without Open, and without Configure having
// built anything but the Destination itself.
//
// Write writes records in order and returns how many of the leading
// records were durably written: 0 <= n <= len(records). It must return a
// non-nil error if n < len(records). It must not modify the slice or the
// records, and must not retain them after it returns. The SDK
// acknowledges records[:n] to Conduit and negatively acknowledges
// records[n:] with err; an error marked with [RecordFault] or [Retryable]
// changes what happens to records[n:] (see those functions). A Write that
// breaks the contract (n out of range, or n < len(records) with a nil
// error) has every record it did not confirm nacked with an error that
// says how the contract was broken.
//
// Write is never called concurrently with itself, unless the destination
// is a [ConcurrentDestination], and never with an empty slice. How many records one Write gets is the batching policy's (the
// sdk.batch.* parameters): whatever has arrived, up to its limits, while
// the previous Write ran.
type Destination interface {
	Open(ctx context.Context) error
	Write(ctx context.Context, records []Record) (n int, err error)
	Teardown(ctx context.Context) error
}
