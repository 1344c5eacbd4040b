// Package format turns records into bytes in the record formats a
// destination's pipeline settings choose with sdk.record.format and
// sdk.record.format.options, the parameters of the incumbent SDK.
//
// [New] returns an [opencdc.RecordSerializer]; the SDK sets it on each
// record (Record.SetSerializer) before the connector's Write, and a
// connector that writes bytes takes them from Record.Bytes, which then
// honours the configured format. A record the serializer fails on comes
// out of Record.Bytes as OpenCDC JSON, conduit-commons' fallback.
//
// # Formats
//
//   - [OpenCDCJSON] (opencdc/json, the default): the record as OpenCDC JSON,
//     byte for byte what Record.Bytes returns with no serializer set.
//     Position and raw data are base64 strings, structured data are JSON
//     objects. It takes no options.
//   - [DebeziumJSON] (debezium/json): a Debezium change event in a Kafka
//     Connect envelope, {"schema":…,"payload":{"before","after","source",
//     "op","ts_ms","transaction"}}. The record's metadata is the source,
//     opencdc.readAt gives ts_ms (in milliseconds), the operation gives op
//     (c, u, d, r for snapshot). Raw data holding a JSON object is parsed;
//     other raw data goes in a field named by debezium.rawData.key (default
//     opencdc.rawData) as base64. The schema is inferred from the values,
//     with the fields of a map in sorted order. Options:
//     debezium.schema.name (the envelope schema's name, none by default)
//     and debezium.rawData.key.
//   - [Template] (template): the options are a Go [text/template] executed
//     on the [opencdc.Record]; a missing map key is an error.
//
// # Text that is not valid UTF-8
//
// JSON holds only valid text. Raw data keeps every byte: it is written as
// base64 (debezium/json parses raw data as a JSON object only when it is
// valid UTF-8). A structured string's invalid bytes are written as
// U+FFFD, as conduit-commons' Record.Bytes writes them, and since
// Record.Bytes falls back to that on any serializer error, a serializer
// cannot refuse the record: a destination that must not change text
// refuses such records itself before it serializes them
// (github.com/connkit/connkit/sdk.CheckUTF8 names the field).
//
// # Templates
//
// The incumbent SDK gives templates the sprig function library. This
// package uses text/template with no dependency beyond the standard
// library, and gives templates only these functions, written to behave as
// sprig's do: toJson, toPrettyJson, toRawJson, toString, typeOf, typeIs,
// b64enc and b64dec. A template that calls any other sprig function does
// not parse, and [New] says so. For example,
//
//	{{ if typeIs "opencdc.RawData" .Payload.After }}{{ printf "%s" .Payload.After }}{{ else }}{{ toJson .Payload.After }}{{ end }}
//
// writes raw payloads as they are and structured ones as JSON.
//
// # Compatibility
//
// The bytes are those of the incumbent SDK v0.14.1 for the same record and
// settings, with these differences: the fields of a map in a Debezium
// schema are sorted (the incumbent lists them in Go's random map order);
// unknown option keys are an error (the incumbent ignores them); an empty
// template is an error (the incumbent writes nothing for every record);
// and a value the incumbent's Debezium schema inference panics on (a
// channel, a function) is an error instead.
package format
