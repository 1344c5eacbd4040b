// Package plugin is the server side of Conduit's connector protocol: it
// serves a [Factory]'s source and destination through go-plugin the way
// Conduit launches standalone connectors, drives their calls with the
// batching and retry policies, and tracks positions and acknowledgements.
//
// Both roles share one design. An instance (instance.go) makes the calls
// every connector has, Configure, Open, Teardown and the lifecycle hooks,
// in the order the protocol allows and guarded against panics. Its one Run
// is an owner loop (owner.go) that takes records from a reader's inbox,
// collects them in a batcher and hands them to a worker a batch at a time.
// A role adds only what differs: a source reads from the connector and its
// worker sends to Conduit, while it takes Conduit's acks (source.go); a
// destination receives from Conduit and its worker writes to the
// connector and sends acks (destination.go, outcome.go).
//
// Package sdk builds a configured [Source] or [Destination], plain values,
// at Configure; this package imports neither sdk nor middleware.
package plugin
