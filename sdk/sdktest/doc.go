// Package sdktest is the test kit for connector authors: conformance suites
// that prove a source or destination keeps the contracts Conduit relies on,
// and fault injection helpers for a destination's own tests.
//
// # The suites
//
// Run [Source] or [Destination] from a plain Go test:
//
//	func TestConformance(t *testing.T) {
//		sdktest.Destination(t, sdktest.DestinationSuite{
//			Connector: myconnector.Connector,
//			Config:    map[string]string{"path": filepath.Join(t.TempDir(), "out.jsonl")},
//			ReadBack:  readTheFile, // optional: lets the kit check what was written
//			Plugin:    "./cmd/my-plugin", // optional: also run over the real protocol
//		})
//	}
//
// A suite is meant to run on its own, not in parallel with other tests:
// its leak check counts every goroutine started while it runs, including
// those of a ReadBack. A library's worker that, once started, lives as long
// as the process (a file watcher, say) is no leak: name its function in
// the suite's IgnoreGoroutines.
//
// Every check is a subtest with a stable name, so one can be run alone
// (go test -run 'TestConformance/InProcess/Stop') or skipped through the
// suite's Skip field, which takes any check's name below, or its first
// part ("Batching"); a name that is none of them fails the suite, listing
// those it takes. A failure says what to fix.
//
// The runtime checks run in process: the connector is served by an
// [sdk.Server], which runs the plugin server a plugin binary runs, over
// gRPC inside the test process, so they are fast, see the race detector,
// and stop at breakpoints; the kit layers its fault injectors and its log
// of the Writes over the connector's destinations with [sdk.Factory.Wrap].
// With Plugin set they run again against the plugin binary, launched and
// driven with the protocol's own client as Conduit does (subtests
// InProcess and Plugin). [Plugin] reuses a binary built into $CONNKIT_BIN.
//
// # What the suites check
//
// Both roles:
//   - Specification: a name, a semantic version with a leading v, a
//     description for every parameter, defaults that pass their own
//     validations.
//   - Configure/Valid, Configure/MissingRequired, Configure/BadValues:
//     the suite's Config is accepted; leaving out a required parameter, an
//     unknown parameter, a value of the wrong type, outside its bounds or
//     not among its allowed values, and each configuration in Invalid are
//     rejected in Configure with an error that names the parameter.
//   - Specify (Plugin only): the binary's specification over the protocol
//     is the Connector's.
//   - OpenTeardown: Teardown without Configure, without Open, and after
//     Open without Run.
//   - Lifecycle: OnCreated, OnUpdated and OnDeleted (also without
//     Configure) succeed, in Conduit's orders.
//   - Batching/Size, Batching/Delay, Batching/Bytes: the sdk.batch.*
//     settings are honoured (skipped for connectors without them).
//   - NoGoroutineLeaks: after every check, no goroutine is left running.
//
// Sources:
//   - Read: records have unique, non-empty positions and a valid
//     operation, with a payload for creates, updates and snapshots and a key
//     for deletes; the test log summarises operations and payload kinds.
//   - Resume: after acknowledging half of what it read and restarting from
//     the last acknowledged position, the source delivers the unacknowledged
//     records again, in order, and none of the acknowledged ones.
//   - Stop: Stop returns promptly with the position of the last record
//     sent; that record arrives; acks after Stop are accepted; Teardown
//     succeeds. With sdk.batch.size, Stop sends the partial batch.
//   - Crash/Read (Plugin only): the plugin binary is killed with SIGKILL
//     at the points of SourceSuite.Crash, with records in flight, and a
//     fresh one opened at the last acknowledged position, as Conduit
//     restarts a pipeline: the records sent after it come again, first and
//     in order, none acknowledged before it; the test log says how many
//     were due again and which came again.
//
// Destinations:
//   - Write/Operations: creates, updates, snapshots and deletes, with raw
//     (JSON) and structured keys and payloads, are all acknowledged.
//   - RoundTrip (with ReadBack): every acknowledged record is in the
//     destination's system, once, with its payload's fields.
//   - RoundTrip/Keyed (with ReadBack and Keyed): an update replaces the
//     record with its key, a delete removes it.
//   - Stop: Stop at the last record, sent before any ack arrived, returns
//     once everything is acknowledged.
//   - WriteContract (in process): Write returns 0 <= n <= len(records), an
//     error whenever n < len(records), does not modify its input, and keeps
//     to this when its context is cancelled; with ReadBack, the n records
//     it reports are really written.
//   - Write/Failure (in process): with a failure injected in the middle of
//     a batch ([FailAt] between the plugin server and the connector), the
//     records before it are acknowledged, and written, and the failure
//     reaches Conduit in the nack.
//   - Crash/Write (Plugin and ReadBack only): the plugin binary is killed
//     with SIGKILL at the points of DestinationSuite.Crash, inside a batch
//     not yet acknowledged, and with the acknowledgements of the batch
//     written before it lost, as when Conduit dies too; a fresh one gets
//     every record not acknowledged, in order, as Conduit sends them
//     again, written ones included: every record
//     acknowledged before a kill, and in the end every record, is in the
//     destination's system; records found more than once fail the check
//     if [Delivery] is [Idempotent] or [ExactlyOnce] and are reported in
//     the test log if it is [AtLeastOnce], as are the records sent again.
//
// A failure that compares records names the first record that differs
// (its index and position) and its first field that differs, such as
// payload.after.name with both values, then counts the rest; [DiffRecords]
// gives a connector's own tests the same message.
//
// # Faults
//
// [FailAt], [FailAfter] and [DropAt] wrap a destination to make a Write
// fail at a record, after a while, or with the connection dropped under
// it; [Proxy] is a TCP proxy between a connector and its system whose
// [Proxy.Drop] breaks every connection through it.
package sdktest
