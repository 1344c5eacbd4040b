// Package plugin is the server side of Conduit's connector protocol: it
// serves a [Factory]'s source and destination through go-plugin the way
// Conduit launches standalone connectors, drives their calls with the
// batching and retry policies, and tracks positions and acknowledgements.
//
// Both roles share one design. An instance (instance.go) makes the calls
// every connector has, Configure, Open, Teardown and the lifecycle hooks,
// in the order the protocol allows and guarded against panics. Its one Run
// is an owner loop (owner.go) that collects records from a reader's inbox
// in a batcher and hands due batches to the role's flow, which reports
// back on events. A role adds only what differs: a source reads from the
// connector, and its flow, the sender, sends each batch to Conduit, while
// it takes Conduit's acks (source.go, sender.go); a destination receives
// from Conduit, and its flow, the writers, writes batches, several at once
// within a limit that finds the knee (limiter.go), in lanes by key
// (lanes.go), and sends the acks in record order through one ledger, one
// Send at a time (writers.go, ledger.go, outcome.go).
//
// Package sdk builds a configured [Source] or [Destination], plain values,
// at Configure; this package imports neither sdk nor middleware.
package plugin
