// Package schema registers, fetches and applies the Avro schemas that Conduit
// and its connectors attach to records.
//
// Conduit's builtin connectors, and every connector built on Conduit's own
// SDK, encode structured keys and payloads as Avro, register the schema with
// Conduit's schema service and name it in the record's metadata
// (opencdc.payload.schema.subject and .version, opencdc.key.schema.subject
// and .version). This package is what the SDK's schema middleware reads and
// writes such records with; it knows nothing of connectors or middleware.
//
// # Registries
//
// A [Registry] creates schemas under a subject and returns them by subject and
// version. [Dial] connects to Conduit's schema service; [NewInMemory] keeps
// schemas in the process, for tests and for connectors run outside Conduit;
// [Cached] puts a cache in front of either. [FromEnv] picks one the way a
// plugin must: the service when Conduit says where it is, otherwise memory.
// [NewContext] and [FromContext] carry a registry's [Codecs] to the code
// that needs them.
//
// # Codecs
//
// A [Codec] decodes and encodes structured data with one Avro schema, parsed
// once. [Codecs] caches them by subject and version, and registers the schema
// [Extract] derives from a value's shape the first time it sees that shape.
// Schemas Extract produces are the ones Conduit's SDK would register for the
// same data, so connectors on either side read each other's records.
//
// Each cache keeps at most [CacheSize] entries, so that a pipeline that goes
// through many schema versions runs in bounded memory; a hit takes only a
// shared read lock.
//
// # Decoded values
//
// [Codec.Decode] returns these Go types:
//
//	Avro                          Go
//	null                          nil
//	boolean                       bool
//	int                           int (the value fits in 32 bits)
//	long                          int64
//	float                         float32
//	double                        float64
//	string, enum                  string
//	bytes                         []byte
//	fixed                         [N]byte
//	record (nested)               map[string]any
//	map                           map[string]any
//	array                         []any (nil when empty)
//	union                         the value of the branch written, untagged
//	int date                      time.Time (UTC)
//	long timestamp-millis/micros  time.Time (UTC)
//	long local-timestamp-*        time.Time (in time.Local)
//	int time-millis, long time-micros  time.Duration
//	bytes/fixed decimal           *big.Rat
//
// These are the types Conduit's SDK hands its destinations, so code written
// for either sees the same values. [Codec.Encode] accepts them back. For
// numbers it accepts exactly the Go types conduit-commons' serde does:
// int takes int, int8, int16, int32, uint8 and uint16; long takes int,
// int32, int64 and uint32; float takes float32; double takes float32 and
// float64. Anything else, an int64 for an int say, is an error, not a
// silent conversion.
package schema
