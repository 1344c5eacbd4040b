// Package sdk is what a Conduit connector's author writes against.
//
// A connector is a standalone plugin binary that Conduit launches and drives
// over gRPC. Its main function calls [Serve] with a [Connector]: a name, a
// semantic version, and a [Source] or a [Destination] (or both), each built
// by a factory ([NewSource], [NewDestination]) from a config struct whose
// field tags declare its parameters (package sdk/config). A test serves a
// Connector inside its own process with [NewServer], on a listener, and
// drives it over the same protocol.
//
// # Contracts
//
// What a connector implements ([Source], [Destination], their optional
// interfaces, [Record], [Fields], the outcomes [RecordFault] and
// [Retryable]) is declared, with its contract, in package sdk/connector,
// which imports none of the plugin machinery; package sdk declares the
// same names, so that a connector's main package needs this one import. A
// library that only implements a Destination imports sdk/connector.
// [Destination.Write] follows io.Writer: it returns how many leading
// records were durably written, and an error whenever that is fewer than
// all; [RecordFault] marks records[n] as the one at fault, [Retryable]
// the system. Go doc of [connector.Record] shows a record's fields.
//
// # Retries
//
// Retries follow the sdk.retry.* parameters: up to sdk.retry.attempts
// times, after a wait that starts at sdk.retry.delay and doubles up to
// sdk.retry.maxDelay, each drawn from its upper half so that connectors
// that failed together do not retry together. The defaults (8, 100ms, 10s)
// wait 11 to 23 s in all: long enough to ride out a deadlock, a dropped
// connection or a failover, short enough that an outage surfaces as a
// failed pipeline, which Conduit restarts with its own backoff. A retry
// that writes a record starts the count afresh. Stop ends the current
// wait and makes one last attempt at once; Teardown makes none.
//
// # Batching
//
// Batches size themselves (group commit): whenever the destination is free
// to write, or Conduit to take a source's next message, everything that has
// arrived so far, up to sdk.batch.size records and sdk.batch.bytes bytes,
// goes in one batch. Conduit is free to take a source's message as soon as
// its transport takes it; while Conduit does not read, gRPC's flow control
// holds the sender, and the next message carries what was read meanwhile.
// Where a busy Conduit acks message by message and reads the next only
// then (v0.14's v2 engine), a due message also waits for that ack. Other
// acks pace nothing (Conduit v0.19 sends them once it has stored the
// positions). An idle
// pipeline writes each record at once, a busy one writes large batches,
// and no batch waits for records that may not come unless sdk.batch.delay
// says it may. What a plugin holds ahead of its connector is bounded (two
// batches' worth; 2048 records and 8 MiB when the size and the bytes set
// no limit): while it is full, the plugin stops receiving, and gRPC's flow
// control pushes back on Conduit. Stop and Teardown write or send what is
// held without waiting.
//
// # The sdk.* parameters
//
// Every connector has the sdk.* parameters that Conduit pipelines set on
// any connector, with the same names, types, defaults and meanings as in
// the incumbent Conduit SDK: batching and retries, which the plugin server
// runs as policies, and schema decoding and encoding, record format and
// rate limit, which package middleware's wrappers apply to each batch. A
// [Connector] changes their defaults by name (SourceDefaults,
// DestinationDefaults); a pipeline overrides them parameter by parameter.
// connkit adds sdk.batch.bytes, sdk.retry.*, sdk.write.concurrency (how
// many Writes of a [ConcurrentDestination] are in flight together, their
// records acknowledged in order) and sdk.metrics.*: with
// sdk.metrics.address set, the plugin serves what it measures of the
// connector (records, batches and why they went, waits, Write and Read
// times, retries, what it holds) in the Prometheus text format, with the
// connector's own metrics (package sdk/metrics); every
// sdk.metrics.logInterval a progress line says the same in Conduit's log.
//
// # Optional behaviour
//
// The optional interfaces ([Acker], [BatchReader], [ConcurrentDestination],
// the lifecycle hooks) are described in package sdk/connector. Connector
// code logs through [Logger] and learns the largest record Conduit takes
// from [MaxRecordSize].
package sdk
