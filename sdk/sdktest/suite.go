package sdktest

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/connkit/connkit/internal/leakcheck"
	"github.com/connkit/connkit/sdk"
)

// Invalid is a configuration the connector must reject in Configure, with
// an error that names Param.
type Invalid struct {
	Config map[string]string // merged over the suite's Config
	Param  string
}

// SourceSuite describes a source for [Source].
type SourceSuite struct {
	Connector sdk.Connector
	// Config is a working configuration. The source must be able to
	// produce at least 3*Records records with it, from any position.
	Config map[string]string
	// Plugin, if set, runs every runtime check a second time against the
	// connector's plugin binary, driven over the protocol as Conduit does:
	// the path of the binary, or of its main package, which the suite
	// builds with go build. [Plugin] picks a prebuilt binary when there is
	// one.
	Plugin string
	// Records is how many records a check reads; default 20.
	Records int
	// Invalid lists further configurations Configure must reject.
	Invalid []Invalid
	// Crash shapes the crash check (Crash/Read, Plugin only). The source
	// must produce Crash.Records records with Config from the start, and,
	// as for Resume, the same records with the same positions again after
	// any position it gave.
	Crash Crashes
	// Timeout bounds each check; default one minute.
	Timeout time.Duration
	// Skip names checks not to run, each with the reason, which the test
	// log shows: "Resume": "the source cannot restart from a position".
	// A name skips the checks under it too ("Batching"), in both modes.
	Skip map[string]string
}

// DestinationSuite describes a destination for [Destination].
type DestinationSuite struct {
	Connector sdk.Connector
	// Config is a working configuration.
	Config map[string]string
	// Plugin is as in [SourceSuite].
	Plugin string
	// Record makes the records the checks write: record id, with operation
	// op and, if structured, structured key and payload, else raw JSON.
	// Records of different ids must not overwrite each other. Nil means
	// the kit's own: key {"id": id}, payload {"id": id, "name":
	// "sdktest-<id>"}, as [TestRecord].
	Record func(id int, op sdk.Operation, structured bool) sdk.Record
	// ReadBack, if set, returns what the destination's system holds, for
	// the round-trip checks: every record written (or what it became) must
	// be there, once, with its payload's fields (compared by the "id"
	// field; records without a matching id are ignored). It may return
	// records the suite did not write.
	ReadBack func(ctx context.Context) ([]sdk.Record, error)
	// Keyed says the destination keeps one record per key, as a table
	// does: with ReadBack, the kit checks that an update replaces the
	// record and a delete removes it.
	Keyed bool
	// Records is how many records a check writes; default 20.
	Records int
	// Delivery is what the destination promises for records Conduit
	// sends again after a crash; the crash check (Crash/Write, Plugin and
	// ReadBack only) holds it to that.
	Delivery Delivery
	// Crash shapes the crash check.
	Crash Crashes
	// Invalid lists further configurations Configure must reject.
	Invalid []Invalid
	// Timeout bounds each check; default one minute.
	Timeout time.Duration
	// Skip names checks not to run, each with the reason.
	Skip map[string]string
}

// check is one named check of a suite.
type check struct {
	name string
	run  func(t tb, ctx context.Context)
}

// runSuite runs a suite: the specification checks, then the runtime checks
// that checks gives for each runner, in process and, if plugin is set, on
// the plugin binary, where Specify leads them, and last the leak check.
func runSuite(t tb, r role, plugin string, skip map[string]string, timeout time.Duration, checks func(runner) []check) {
	t.Helper()
	before := leakcheck.Snapshot()
	runChecks(t, specChecks(r), skip, timeout)
	runners := []runner{inProcess{c: r.c}}
	if plugin != "" {
		runners = append(runners, outOfProcess{buildPlugin(t, plugin)})
	} else {
		t.Run("Plugin", func(t tb) {
			t.Skipf("set the suite's Plugin to run the checks on the plugin binary too, and the crash checks (Crash/Write, Crash/Read), which kill it")
		})
	}
	for _, run := range runners {
		t.Run(run.name(), func(t tb) {
			cs := checks(run)
			if _, ok := run.(outOfProcess); ok {
				cs = append([]check{{"Specify", func(t tb, ctx context.Context) { checkSpecify(t, ctx, r, run) }}}, cs...)
			}
			runChecks(t, cs, skip, timeout)
		})
	}
	noLeaks(t, before)
}

func runChecks(t tb, checks []check, skip map[string]string, timeout time.Duration) {
	t.Helper()
	for _, c := range checks {
		t.Run(c.name, func(t tb) {
			for name, why := range skip {
				if name == c.name || strings.HasPrefix(c.name, name+"/") {
					t.Skipf("skipped by the suite: %s", why)
				}
			}
			ctx, cancel := context.WithTimeout(t.Context(), timeout)
			defer cancel()
			c.run(t, ctx)
		})
	}
}

// noLeaks checks that the goroutines the suite's checks started have ended.
func noLeaks(t tb, before leakcheck.Goroutines) {
	t.Run("NoGoroutineLeaks", func(t tb) {
		if leaked := before.Leaked(leakGrace); len(leaked) > 0 {
			t.Errorf("%d goroutines started during the suite are still running after every connector was torn down: Teardown must stop what Open and the other calls started, and Read and Write must return when their context is done. Their stacks:\n\n%s",
				len(leaked), strings.Join(leaked, "\n\n"))
		}
	})
}

func merge(base map[string]string, more ...map[string]string) map[string]string {
	out := maps.Clone(base)
	if out == nil {
		out = map[string]string{}
	}
	for _, m := range more {
		maps.Copy(out, m)
	}
	return out
}

func withDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Source runs the conformance suite on a source. Every check is a subtest
// whose failure says what to fix; see the package documentation for the
// list.
func Source(t *testing.T, s SourceSuite) {
	t.Helper()
	runSource(testingT{t}, s)
}

// Destination runs the conformance suite on a destination.
func Destination(t *testing.T, s DestinationSuite) {
	t.Helper()
	runDestination(testingT{t}, s)
}

// leakGrace is how long goroutines get to end after the last check.
var leakGrace = 10 * time.Second
