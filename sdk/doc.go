// Package sdk is what a Conduit connector's author writes against.
//
// A connector is a standalone plugin binary that Conduit launches and drives
// over gRPC. Its main function calls [Serve] with a [Connector]: a name, a
// semantic version, and a [Source] or a [Destination] (or both), each built
// by a factory from a config struct.
//
// # Contracts
//
// [Destination.Write] follows io.Writer: it returns how many leading records
// were durably written, and an error whenever that is fewer than all. The SDK
// acknowledges those records to Conduit and negatively acknowledges the rest
// with the error. [Source.Read] returns one record at a time with a unique,
// non-empty position; Conduit hands the last acknowledged position back to
// [Source.Open] after a restart.
//
// # Configuration
//
// A config struct's field tags declare the parameters: their names, types,
// defaults, descriptions and validations (see [ParseConfig]). The
// specification Conduit shows users is derived from the same struct, so it
// cannot go stale, and a configuration is parsed and validated once, before
// the connector is built. Errors name the parameter, the value given and what
// was expected.
//
// # Middleware and batching
//
// Every connector is wrapped in middleware.Default() unless
// [Connector.Middleware] says otherwise: batching, configured by the
// sdk.batch.size, sdk.batch.delay and sdk.batch.bytes parameters it adds to
// the specification. A destination then gets whole batches in Write, and a
// source's records reach Conduit in batches. See package middleware.
//
// # Optional behaviour
//
// A source that needs acknowledgements implements [Acker]; one that can read
// many records at once implements [BatchReader]. Connectors that
// react to being created, updated or deleted implement [CreatedHook],
// [UpdatedHook] or [DeletedHook]. Connector code logs through [Logger].
package sdk
