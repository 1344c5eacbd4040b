// Package middleware wraps a connector's calls in the behaviour that the
// incumbent Conduit SDK's sdk.* parameters configure: schema decoding and
// encoding, record format and rate limit.
//
// Each is a settings struct whose field tags declare its parameters (see
// sdk.ParseConfig) and whose Wrap method returns a plain function around a
// destination's [Write] or a source's [Read], or nil when the settings
// leave nothing to do. Package sdk parses the settings from a pipeline's
// configuration, with the values a connector gives as defaults, and wraps
// every connector in them (see sdk.Connector); the wrappers act once per
// batch, outside the connector's own code.
//
// # Schemas
//
// [SchemaDecoding] adds sdk.schema.extract.payload.enabled and
// sdk.schema.extract.key.enabled to destinations: Avro keys and payloads
// whose metadata names a schema in Conduit's schema service are decoded
// before Write. [SchemaEncoding] adds sdk.schema.extract.* and
// sdk.schema.context.* to sources: structured data is encoded as Avro with
// a schema extracted and registered once per shape. Names, defaults and
// subjects are the incumbent's.
//
// # Record format
//
// [RecordFormat] adds sdk.record.format and sdk.record.format.options to
// destinations: it sets the serializer (package middleware/format) that a
// record's Bytes method uses.
//
// # Rate limit
//
// [RateLimit] adds sdk.rate.perSecond and sdk.rate.burst to destinations.
//
// Batching (sdk.batch.*) and retries (sdk.retry.*) are not middleware:
// they decide when Write is called, so the plugin server runs them as
// policies (see sdk.Batching and sdk.Retry).
package middleware
