package sdk

import "context"

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
	Write(ctx context.Context, records []Record) (n int, err error)
	Teardown(ctx context.Context) error
}
