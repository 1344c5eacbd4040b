// Package middleware declares the connector interfaces and wraps
// connectors to add behaviour around them.
//
// [Source] and [Destination] are declared here, with the optional
// interfaces a connector may implement; package sdk gives them to authors
// under the same names.
//
// A [Middleware] is a function from a connector to a connector, built from
// explicit settings, and [Chain] composes them, the first outermost.
// Middleware that users configure in a pipeline is a [SourceSettings] or a
// [DestinationSettings]: a struct whose field tags declare the parameters
// it adds to the specification and whose field values are their defaults.
// The SDK parses a copy of it from the configuration and asks it for the
// middleware. Nothing is found by reflection over a connector's own config
// or hidden in a context.
//
// Every connector gets [DefaultSource] or [DefaultDestination] unless its
// sdk.Connector says otherwise.
//
// # Batching
//
// [Batching] adds sdk.batch.size, sdk.batch.delay and sdk.batch.bytes. It
// wraps nothing: the SDK hands its [batcher.Policy] to the plugin server,
// which decides when a destination's Write is called and which records
// travel together from a source.
//
// Batches size themselves (group commit): whenever a destination is free,
// everything received so far, up to sdk.batch.size records and
// sdk.batch.bytes bytes, is written in one Write; a source's message is
// whatever was read while the previous one was sent. So an idle pipeline
// writes each record at once and a busy one writes large batches, with no
// setting. sdk.batch.delay is the longest an incomplete batch may wait to
// fill (0: it does not wait); sdk.batch.size alone never makes a batch
// wait. What a plugin holds ahead of its connector is bounded (two
// batches' worth, by default 2048 records and 8 MiB): while it is full,
// the plugin stops receiving and gRPC's flow control pushes back on
// Conduit, so records wait in Conduit, not in the plugin, and memory stays
// flat. Stop writes what is held without waiting.
//
// # Retries
//
// [Retry] adds sdk.retry.attempts, sdk.retry.delay and sdk.retry.maxDelay
// to destinations. Like [Batching], it wraps nothing: the SDK hands it to
// the plugin server, which retries the records of a Write that failed with
// an error the connector marked retryable.
//
// # Schemas
//
// [SchemaDecoding] adds sdk.schema.extract.payload.enabled and
// sdk.schema.extract.key.enabled to destinations: [DecodeSchemas] decodes
// Avro keys and payloads whose metadata names a schema in Conduit's schema
// service, before Write. [SchemaEncoding] adds sdk.schema.extract.* and
// sdk.schema.context.* to sources: [EncodeSchemas] encodes structured data
// as Avro with a schema it extracts and registers. Both take the registry
// from [Env]; names, defaults and subjects are the incumbent Conduit SDK's.
//
// # Record format
//
// [RecordFormat] adds sdk.record.format and sdk.record.format.options to
// destinations: [FormatRecords] sets the serializer (package
// middleware/format) that a record's Bytes method uses.
//
// # Rate limit
//
// [RateLimit] adds sdk.rate.perSecond and sdk.rate.burst to destinations;
// [LimitRate] is the middleware.
//
// # Wrappers
//
// A wrapper should implement Unwrap, returning what it wraps, so that the
// SDK can find the optional interfaces (acks, lifecycle hooks, batch reads)
// of the connector inside; it resolves them once, when the connector is
// configured, and the first layer that implements one is the one called.
package middleware
