// Package plugin is the server side of Conduit's connector protocol: it
// serves a [Factory]'s source and destination through go-plugin the way
// Conduit launches standalone connectors, drives their calls with the
// batching and retry policies, and tracks positions and acknowledgements.
//
// Both roles share one design. An instance (instance.go) makes the calls
// every connector has, Configure, Open, Teardown and the lifecycle hooks,
// in the order the protocol allows and guarded against panics (safe.go).
// Its one Run is an owner loop (owner.go) that collects records from a
// reader's inbox in a batcher and hands due batches to the role's flow,
// which reports back on events. A role adds only what differs.
//
// # A record's path
//
// Destination: the Run stream decodes Conduit's messages
// (stream_destination.go); Run's reader puts their records in the inbox
// (destination.go, inbox.go), which the owner empties into its batcher
// (owner.go) while the hold bound has room (bounds.go, size.go); a batch
// due goes to the writers (writers.go), which start a Write of it on one
// of their workers (workers.go) within the limit (limiter.go), in lanes by
// key (lanes.go); the Write's outcome, retries included (outcome.go,
// retry.go), judged against the Write contract (acks.go), becomes its
// records' acks, which the ack sender (acksender.go) puts in the ledger
// (ledger.go) and sends to Conduit in record order. Stop's requests reach
// the owner through its stops (stops.go). A lone batch is written and
// acked on the owner's goroutine (writers.go, acksender.go), and a run of
// them has the process run on one thread (procs.go).
//
// Source: Run's reader calls Read or ReadBatch and puts what it read in
// the inbox (source.go, inbox.go); the owner hands due batches to the
// sender (sender.go), which sends one message at a time
// (stream_source.go encodes it), paced by Conduit's acks where Conduit
// reads a message only once it has acked the last (readpace.go); the
// acker (source.go) takes Conduit's acks and hands them to the connector.
//
// # Words
//
// Each means one thing here:
//
//   - hold: what the owner's batcher holds, records received or read and
//     not yet through the flow, and its bound (holdFor). A Write's lanes
//     are claimed, not held; a due batch that waits for Conduit's ack
//     awaits it (readPace.awaiting).
//   - rate: how fast the flow handles records (flowRate), which sets how
//     far the reader may go ahead of the owner. pace: how a source's
//     messages are timed by Conduit's acks (readPace).
//   - drain: the owner hands out what it holds without waiting, because
//     Stop was called or the reader ended; its batches are counted with
//     the reason stop. A flush (the metric connkit_flushes_total) is a
//     batch handed out, for whatever reason. Stop is the RPC.
//   - settle: a Write decides a record's outcome, its ack or nack, and
//     tells the ledger; judge: turn a Write's (n, err) into the outcomes
//     the Write contract gives (acks.go).
//   - writes: the Writes handed out, as the ledger keeps them; a count of
//     them in flight is inFlight.
//   - lone: a batch that is all the owner holds, collected once everything
//     before it was through the flow (dueBatch.lone), as Conduit's v2
//     engine sends them from a source without batch settings.
//
// Package sdk builds a configured [Source] or [Destination], plain values,
// at Configure; this package imports neither sdk nor middleware.
package plugin
