// Package batcher collects items into batches and flushes them by count, by
// bytes or by delay since a batch's first item, or when asked. It depends on
// the standard library only.
//
// # Contract
//
//   - A flush gets exactly the items collected, in the order they were
//     added, and never an empty batch. An item larger than the byte limit
//     travels alone.
//   - One flush runs at a time, on the batcher's own goroutine, and no lock
//     is held while it runs. Meanwhile [Batcher.Add] collects the next batch;
//     once that one is complete too, Add blocks until the flush returns.
//   - A flush error is sticky: nothing more is flushed, and Add, Flush and
//     Close return the error from then on.
//   - [Batcher.Flush] returns once everything added before it is flushed; it
//     honours its context and may be called any number of times.
//     [Batcher.Close] flushes and stops the goroutine.
//
// # Policy
//
// [Policy] limits count, bytes and delay; zero means no limit, and the zero
// Policy flushes every item on its own. Limits combine: a batch is complete
// as soon as any limit is reached.
package batcher
