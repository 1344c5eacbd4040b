// Package middleware holds the wrappers of a connector's calls behind the
// sdk.* parameters of the incumbent Conduit SDK that act on each batch:
// schema decoding and encoding, record format and rate limit.
//
// Each is a plain function that takes its settings explicitly and wraps a
// destination's [Write] or a source's [Read]; with settings that leave it
// nothing to do, it returns what it wraps unchanged. Package sdk parses the
// parameters from a pipeline's configuration and wraps every connector in
// these, outside the connector's own code:
//
//   - [DecodeSchemas]: sdk.schema.extract.payload.enabled and
//     sdk.schema.extract.key.enabled of destinations. Avro keys and payloads
//     whose metadata names a schema in Conduit's schema service are decoded
//     before Write.
//   - [EncodeSchemas]: sdk.schema.extract.* and sdk.schema.context.* of
//     sources. Structured data is encoded as Avro with a schema extracted
//     and registered once per shape. Names, defaults and subjects are the
//     incumbent's.
//   - [FormatRecords]: sdk.record.format and sdk.record.format.options of
//     destinations, through the serializers of package middleware/format,
//     which a record's Bytes method then uses.
//   - [LimitRate]: sdk.rate.perSecond and sdk.rate.burst of destinations.
//
// Batching (sdk.batch.*) and retries (sdk.retry.*) are not middleware: they
// decide when Write is called, so the plugin server runs them as policies.
package middleware
