// Package middleware wraps connectors to add behaviour around them.
//
// A [Middleware] is a function from a connector to a connector, and [Chain]
// composes them, the first outermost. Middleware that users configure in a
// pipeline is a [Configurable]: a config struct whose field tags declare the
// parameters it adds to every connector's specification (as in package sdk),
// with methods that build the middleware from the parsed settings. Settings
// are passed explicitly; nothing is found by reflection over a connector's
// own config or hidden in a context.
//
// Every connector gets [Default] unless its sdk.Connector says otherwise.
//
// # Batching
//
// [Batching] adds sdk.batch.size, sdk.batch.delay and sdk.batch.bytes. On a
// destination, the plugin server collects records across Conduit's messages
// and calls Write with complete batches, collecting the next batch while one
// is written. On a source, records read are sent to Conduit in messages of
// that size. The plugin server honours the [batcher.Policy] reported by the
// outermost layer that has one (see [PolicyOf]).
//
// # Wrappers
//
// A wrapper should implement Unwrap, returning what it wraps, so that the
// plugin server can find the optional interfaces (acks, lifecycle hooks,
// batch reads) of the connector inside; the first layer that implements one
// is the one called.
package middleware
