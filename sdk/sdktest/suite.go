package sdktest

import (
	"context"
	"fmt"
	"github.com/connkit/connkit/internal/panics"
	"maps"
	"slices"
	"strconv"
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
	// The suite fails at once on a name that is not a check's.
	Skip map[string]string
	// IgnoreGoroutines names functions whose goroutines the leak check
	// does not count, for a library's worker that, once started, runs for
	// the life of the process: the full name a stack trace shows, such as
	// "github.com/nxadm/tail/watch.(*InotifyTracker).run".
	IgnoreGoroutines []string
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
	// Skip and IgnoreGoroutines are as in [SourceSuite].
	Skip             map[string]string
	IgnoreGoroutines []string
}

// check is one named check of a suite.
type check struct {
	name string
	run  func(t tb, ctx context.Context)
}

// options are what both suites let the author set for the whole suite.
type options struct {
	plugin  string
	skip    map[string]string
	timeout time.Duration
	ignore  []string // functions whose goroutines the leak check ignores
}

// runSuite runs a suite: the specification checks, then the runtime checks
// that checks gives for each runner, in process and, if o.plugin is set, on
// the plugin binary, and last the leak check. A Skip name that is not a
// check's fails the suite before any check runs.
func runSuite(t tb, r role, o options, checks func(runner) []check) {
	t.Helper()
	before := leakcheck.Snapshot()
	if err := checkSkip(o.skip, plan(r, []runner{inProcess{}, outOfProcess{}}, checks, before, nil)); err != nil {
		t.Fatalf("%s.%v", r.suite, err)
	}
	runners := []runner{inProcess{c: r.c}}
	if o.plugin != "" {
		runners = append(runners, outOfProcess{buildPlugin(t, o.plugin)})
	} else {
		t.Run("Plugin", func(t tb) {
			t.Skipf("set the suite's Plugin to run the checks on the plugin binary too, and the crash checks (Crash/Write, Crash/Read), which kill it")
		})
	}
	for _, st := range plan(r, runners, checks, before, o.ignore) {
		if st.runner == "" {
			runChecks(t, st.checks, o.skip, o.timeout)
			continue
		}
		t.Run(st.runner, func(t tb) { runChecks(t, st.checks, o.skip, o.timeout) })
	}
}

// stage is checks that run in turn, under a runner's subtest or none.
type stage struct {
	runner string
	checks []check
}

// plan returns every check of a suite, in the order they run: a check
// added to any of the lists it draws on is run, and can be skipped, with
// nothing else to change.
func plan(r role, runners []runner, checks func(runner) []check, before leakcheck.Goroutines, ignore []string) []stage {
	stages := []stage{{checks: specChecks(r)}}
	for _, run := range runners {
		cs := checks(run)
		if _, ok := run.(outOfProcess); ok {
			cs = append([]check{{"Specify", func(t tb, ctx context.Context) { checkSpecify(t, ctx, r, run) }}}, cs...)
		}
		stages = append(stages, stage{run.name(), cs})
	}
	return append(stages, stage{checks: []check{leakCheck(before, ignore)}})
}

func runChecks(t tb, checks []check, skip map[string]string, timeout time.Duration) {
	t.Helper()
	for _, c := range checks {
		t.Run(c.name, func(t tb) {
			for name, why := range skip {
				if covers(name, c.name) {
					t.Skipf("skipped by the suite: %s", why)
				}
			}
			ctx, cancel := context.WithTimeout(t.Context(), timeout)
			defer cancel()
			// Connector code the check calls directly that panics fails
			// the check, not the test binary: the other checks run.
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("the connector panicked: %v%s", r, panics.At(panics.Where()))
				}
			}()
			c.run(t, ctx)
		})
	}
}

// covers reports whether a Skip name stands for the check: it is the
// check's name or a leading part of it ("Batching" of "Batching/Size").
func covers(skip, check string) bool {
	return skip == check || strings.HasPrefix(check, skip+"/")
}

// checkSkip returns an error if a name in skip covers none of the checks,
// listing the names that would.
func checkSkip(skip map[string]string, stages []stage) error {
	var valid []string
	for _, st := range stages {
		for _, c := range st.checks {
			for name := range pathPrefixes(c.name) {
				if !slices.Contains(valid, name) {
					valid = append(valid, name)
				}
			}
		}
	}
	var unknown []string
	for name := range skip {
		if !slices.Contains(valid, name) {
			unknown = append(unknown, strconv.Quote(name))
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	slices.Sort(valid)
	return fmt.Errorf("Skip names no check of this suite: %s; the checks are %s", strings.Join(unknown, ", "), strings.Join(valid, ", "))
}

// pathPrefixes yields "a", "a/b" and "a/b/c" for "a/b/c".
func pathPrefixes(name string) func(yield func(string) bool) {
	return func(yield func(string) bool) {
		for i, r := range name {
			if r == '/' && !yield(name[:i]) {
				return
			}
		}
		yield(name)
	}
}

// leakCheck is the check that the goroutines the suite's checks started
// have ended.
func leakCheck(before leakcheck.Goroutines, ignore []string) check {
	return check{"NoGoroutineLeaks", func(t tb, _ context.Context) {
		if leaked := before.Leaked(leakGrace, ignore...); len(leaked) > 0 {
			t.Errorf("%d goroutines started during the suite are still running after every connector was torn down: Teardown must stop what Open and the other calls started, and Read and Write must return when their context is done; a library's worker that runs for the life of the process can be named in IgnoreGoroutines. Their stacks:\n\n%s",
				len(leaked), strings.Join(leaked, "\n\n"))
		}
	}}
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
