// Package sdk is what a Conduit connector's author writes against.
//
// A connector is a standalone plugin binary that Conduit launches and drives
// over gRPC. Its main function calls [Serve] with a [Connector]: a name, a
// semantic version, and a [Source] or a [Destination] (or both), each built
// by a factory from a config struct.
//
// # Contracts
//
// [Source], [Destination] and their optional interfaces are declared here,
// each with its contract. [Destination.Write] follows io.Writer: it
// returns how many leading records were durably written, and an error
// whenever that is fewer than all. The SDK acknowledges those records to
// Conduit and negatively acknowledges the rest: records[n] with the error,
// each later one with an error that says it was not attempted because
// records[n] failed. [Source.Read] returns records with unique, non-empty
// positions; Conduit hands the last acknowledged position back to
// [Source.Open] after a restart.
//
// # Outcomes and retries
//
// A Write can say whose failure its error is. [RecordFault] means
// records[n] itself cannot be written (bad data, a constraint): only it is
// nacked, with the error and its position, and records[n+1:] go to a
// following Write. [Retryable] means the system failed (a dropped
// connection, a timeout, a deadlock): records[n:] are written again after
// a jittered, growing backoff ([Retry]) and nacked, with an error that
// says retries ran out, only if they never go through. This matters with a
// dead-letter queue, where every nacked record lands with its nack's
// error.
//
// # Configuration
//
// A connector's configuration is a Go struct whose field tags declare the
// parameters: param (the name), default, desc and validate (required,
// gt=N, lt=N, inclusion=a|b, exclusion=a|b, regex=EXPR):
//
//	type Config struct {
//		URL     string            `param:"url" validate:"required" desc:"Where to connect."`
//		Batch   int               `param:"batch" default:"100" validate:"gt=0,lt=10001" desc:"Rows per statement."`
//		Tables  []string          `param:"tables" desc:"Comma-separated tables to read."`
//		Options map[string]string `param:"options.*" desc:"Driver options, e.g. options.sslmode."`
//	}
//
// Field types are strings, bools, integers, floats, time.Duration,
// []string (comma-separated), map[string]string (a name ending in ".*"),
// nested and embedded structs, and maps of structs; [ParseConfig] has the
// full grammar and an example that uses all of it. The [Specification]
// Conduit shows users is derived from the same struct, so it cannot go
// stale, and [NewSource] and [NewDestination] parse and validate a
// configuration once, before the connector is built. Every problem is
// reported at once, each as a [*ParameterError] that names the parameter,
// the value given and what was expected:
//
//	parameter "batch": got "0", expected between 1 and 10000
//
// Checks the tags cannot express, such as one parameter that depends on
// another, go in a Validate method on the config struct ([Validator]),
// whose errors are reported together with the tags'. The factory passed
// to NewSource or NewDestination runs last, on a valid configuration, and
// may refuse it with a [*ParameterError] too.
//
// # Batching, retries and middleware
//
// Every connector has the sdk.* parameters that Conduit pipelines set on
// any connector, with the same names, types, defaults and meanings as in
// the incumbent Conduit SDK. Two are policies the plugin server runs:
// [Batching] (sdk.batch.size, sdk.batch.delay, sdk.batch.bytes) decides
// which records reach one Write and which travel in one message from a
// source, and [Retry] (sdk.retry.*, which the incumbent does not have)
// what a [Retryable] failure does. The others configure package
// middleware's wrappers of a connector's calls: schema decoding and
// encoding, record format and rate limit. A [Connector] may give its own
// defaults for any group; a pipeline overrides them parameter by
// parameter.
//
// # Optional behaviour
//
// A source that needs acknowledgements implements [Acker]; one that can read
// many records at once implements [BatchReader]. Connectors that
// react to being created, updated or deleted implement [CreatedHook],
// [UpdatedHook] or [DeletedHook]. Connector code logs through [Logger].
package sdk
