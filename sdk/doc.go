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
// Every connector gets the SDK's middleware unless [Connector] lists its
// own (see package middleware): the sdk.* parameters that Conduit pipelines
// set on any connector, with the same names, types, defaults and meanings
// as in the incumbent Conduit SDK. Batching (sdk.batch.size,
// sdk.batch.delay, sdk.batch.bytes) decides how many records reach a
// destination's Write at once and how many records travel in one message
// from a source; a destination's writes can be rate limited
// (sdk.rate.perSecond, sdk.rate.burst). The settings a connector lists are
// its defaults: middleware.Batching{Size: 1000} means batches of 1000
// unless a pipeline says otherwise.
//
// # Optional behaviour
//
// A source that needs acknowledgements implements [Acker]; one that can read
// many records at once implements [BatchReader]. Connectors that
// react to being created, updated or deleted implement [CreatedHook],
// [UpdatedHook] or [DeletedHook]. Connector code logs through [Logger].
package sdk
