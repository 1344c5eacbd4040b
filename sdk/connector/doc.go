// Package connector is the contract a Conduit connector implements, and
// nothing else: [Source], [Destination] and their optional interfaces,
// the [Record] they exchange and its constructors, [Fields] to read a
// record's data, and the outcomes a Write reports ([RecordFault],
// [Retryable]). It imports none of the plugin machinery (gRPC, go-plugin,
// Prometheus, Avro), as database/sql/driver imports nothing of
// database/sql: a library that implements a Destination can depend on it
// alone. Package sdk serves a connector to Conduit, and declares the same
// names, so that a connector's main package needs only sdk.
//
// # Contracts
//
// [Destination.Write] follows io.Writer: it returns how many leading
// records were durably written, and an error whenever that is fewer than
// all. The SDK acknowledges those records to Conduit and negatively
// acknowledges the rest: records[n] with the error, each later one with an
// error that says it was not attempted because records[n] failed.
// [Source.Read] returns records with unique, non-empty positions; Conduit
// hands the last acknowledged position back to [Source.Open] after a
// restart. [Record] shows a record's fields, what each operation fills,
// and the metadata that comes with it.
//
// # Outcomes
//
// A Write can say whose failure its error is. [RecordFault] means
// records[n] itself cannot be written (bad data, a constraint): only it is
// nacked, with the error and its position, and records[n+1:] go to a
// following Write. [Retryable] means the system failed (a dropped
// connection, a timeout, a deadlock): records[n:] are written again, as
// the sdk.retry.* parameters say, and nacked only if they never go
// through. This matters with a dead-letter queue, where every nacked
// record lands with its nack's error.
//
// # Optional behaviour
//
// A source that needs acknowledgements implements [Acker]; one that can
// read many records at once implements [BatchReader]. A destination whose
// Writes may run together implements [ConcurrentDestination]. Connectors
// that react to being created, updated or deleted implement
// [CreatedHook], [UpdatedHook] or [DeletedHook]. A connector that wraps
// another (a fault injector, say) returns it from an Unwrap method, as a
// Source or a Destination, and the SDK finds the optional interfaces
// through it. Connector code logs through [Logger] and learns the largest
// record Conduit takes from [MaxRecordSize].
package connector
