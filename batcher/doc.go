// Package batcher is a batching policy as a pure state machine: it says
// what the next batch is, when it is due, how long to wait for it, and
// whether more items may be taken in. It runs nothing itself, keeps no
// clock and starts no goroutine, so that it can be tested and fuzzed step
// by step. It depends on the standard library only.
//
// # Group commit
//
// A batch is what has been collected when it is taken, up to the policy's
// limits. Whoever writes batches takes the next one whenever it is free, so
// batches size themselves: an idle writer takes each item as it comes, a
// busy one finds many waiting and takes them together. A batch never waits
// for items that may not come: without a [Policy.Delay] it is due at its
// first item; with one, an incomplete batch is due once its oldest item has
// waited the delay, and a batch is complete when it reaches a limit or when
// the [Hold] bound leaves no room for more.
//
// # Contract
//
//   - [Batcher.Take] returns the oldest items collected, in order, never an
//     empty batch, at most Count items and at most Bytes bytes, except that
//     an item larger than Bytes travels alone.
//   - Items stay held, counted against the [Hold] bound, until their batch
//     is done ([Batcher.Done]). [Batcher.Room] says whether the owner may
//     take in more: stopping while it is false is what pushes back on the
//     producer and keeps memory flat.
//   - [Batcher.Due] says why a batch is due ([Reason]): the limit it reached,
//     or the delay it waited, or that the policy has none.
//   - [Batcher.Due] and [Batcher.Wait] take the time as an argument: the
//     owner decides how to wait (a timer in its select loop), the batcher
//     only says until when.
//
// # The owner
//
// One goroutine owns a Batcher and runs the loop: it takes items in while
// there is room, hands a due batch to the writer whenever the writer is
// free, waits for the next due time when nothing else happens, and calls
// Done when a write returns. The example shows the loop without
// goroutines.
package batcher
