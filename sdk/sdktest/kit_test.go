package sdktest

import (
	"cmp"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/connkit/connkit/internal/leakcheck"
	"github.com/connkit/connkit/sdk"
	"github.com/matryer/is"
)

// runSourceSuite runs the source suite on c under a recorder and returns
// what it found.
func runSourceSuite(t *testing.T, s SourceSuite) *results {
	t.Helper()
	s.Timeout = cmp.Or(s.Timeout, 30*time.Second)
	return recordSuite(t, func(t tb) { runSource(t, s) })
}

func runDestinationSuite(t *testing.T, s DestinationSuite) *results {
	t.Helper()
	s.Timeout = cmp.Or(s.Timeout, 30*time.Second)
	return recordSuite(t, func(t tb) { runDestination(t, s) })
}

// recordSuite runs suite under a recorder and returns what it found.
func recordSuite(t *testing.T, suite func(tb)) *results {
	t.Helper()
	rec, res := newRecorder(t)
	rec.Run("Suite", suite)
	rec.finish()
	return res
}

func TestSourceSuitePassesAGoodSource(t *testing.T) {
	leakcheck.Check(t)
	is := is.New(t)
	res := runSourceSuite(t, SourceSuite{Connector: sourceConnector(sourceOK, nil)})
	is.Equal(res.failedChecks(), nil) // a good source passes
	for _, name := range []string{"Specification", "Configure/BadValues", "InProcess/Read", "InProcess/Resume", "InProcess/Stop", "InProcess/Batching/Size", "NoGoroutineLeaks"} {
		found := false
		for _, ran := range res.ran {
			found = found || strings.HasSuffix(ran, "/"+name)
		}
		is.True(found) // every check runs
	}
}

func TestSourceSuiteFindsBrokenSources(t *testing.T) {
	tests := []struct {
		name    string
		bug     sourceBug
		check   string // the check that must fail
		message string // what its message must say
	}{
		{"restarts from the beginning", sourceIgnoresPosition, "InProcess/Resume", "again, which was acknowledged before the restart"},
		{"skips records on resume", sourceSkipsAhead, "InProcess/Resume", "must deliver it again"},
		{"records without positions", sourceNoPosition, "InProcess/Read", "without a position"},
		{"Read ignores its context", sourceIgnoresContext, "InProcess/Stop", "Stop must return promptly"},
		{"a lifecycle hook fails", sourceFailingHook, "InProcess/Lifecycle", "OnCreated fails"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := SourceSuite{Connector: sourceConnector(tt.bug, nil), Records: 10}
			if tt.bug == sourceIgnoresContext {
				s.Timeout = 2 * time.Second
				s.Skip = map[string]string{"Read": "slow", "Resume": "slow", "Batching": "slow"}
			}
			res := runSourceSuite(t, s)
			res.mustFail(t, tt.check, tt.message)
		})
	}
}

func TestSuiteFindsGoroutineLeaks(t *testing.T) {
	is := is.New(t)
	defer func(g time.Duration) { leakGrace = g }(leakGrace)
	leakGrace = 500 * time.Millisecond
	leak := make(chan struct{})
	defer close(leak)
	res := runSourceSuite(t, SourceSuite{Connector: sourceConnector(sourceLeaks, leak), Records: 5})
	checks, messages := res.failures("NoGoroutineLeaks")
	is.Equal(len(checks), 1)
	is.True(strings.Contains(messages, "fakeSource).Open")) // the leaked goroutine's stack
}

func TestSuiteSkipsAndIgnoresGoroutineLeaks(t *testing.T) {
	defer func(g time.Duration) { leakGrace = g }(leakGrace)
	leakGrace = 500 * time.Millisecond
	leak := make(chan struct{})
	defer close(leak)
	tests := []struct {
		name string
		s    SourceSuite
	}{
		{"skipped", SourceSuite{Skip: map[string]string{"NoGoroutineLeaks": "the library's watcher"}}},
		{"its function ignored", SourceSuite{IgnoreGoroutines: []string{"github.com/connkit/connkit/sdk/sdktest.(*fakeSource).Open.func1"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			tt.s.Connector, tt.s.Records = sourceConnector(sourceLeaks, leak), 5
			res := runSourceSuite(t, tt.s)
			is.Equal(res.failedChecks(), nil) // the leak is not reported
			_, skipped := res.skipped["Suite/NoGoroutineLeaks"]
			is.Equal(skipped, tt.s.Skip != nil) // skipped only when Skip says so
		})
	}
}

func TestSuiteRefusesUnknownSkipNames(t *testing.T) {
	is := is.New(t)
	res := runSourceSuite(t, SourceSuite{
		Connector: sourceConnector(sourceOK, nil),
		Skip:      map[string]string{"Batching/Size": "slow", "NoLeaks": "typo", "Resumes": "typo"},
	})
	checks, messages := res.failures("Suite")
	is.Equal(checks, []string{"Suite"}) // the suite itself fails
	is.Equal(len(res.ran), 1)           // before any check runs
	is.True(strings.Contains(messages, `SourceSuite.Skip names no check of this suite: "NoLeaks", "Resumes"`))
	for _, valid := range []string{"Batching", "Batching/Size", "Configure/BadValues", "NoGoroutineLeaks", "Resume", "Specify"} {
		is.True(strings.Contains(messages, " "+valid+",")) // the valid names are listed
	}
}

func TestSpecificationChecks(t *testing.T) {
	type undocumented struct {
		Mode string `param:"mode"`
	}
	type rejects struct {
		Mode string `param:"mode" default:"a" desc:"A mode."`
	}
	newSource := func(name, version string, factory sdk.Factory[sdk.Source]) sdk.Connector {
		return sdk.Connector{Name: name, Version: version, Source: factory}
	}
	src := func(any) (sdk.Source, error) { return &fakeSource{}, nil }
	tests := []struct {
		name    string
		c       sdk.Connector
		invalid []Invalid
		check   string
		message string
	}{
		{"no version", newSource("fake", "", sdk.NewSource(func(fakeConfig) (sdk.Source, error) { return src(nil) })),
			nil, "Specification", "not a semantic version"},
		{"no name", newSource("", "v1.0.0", sdk.NewSource(func(fakeConfig) (sdk.Source, error) { return src(nil) })),
			nil, "Specification", "Connector.Name is empty"},
		{"a name a pipeline cannot refer to", newSource("my:conn", "v1.0.0", sdk.NewSource(func(fakeConfig) (sdk.Source, error) { return src(nil) })),
			nil, "Specification", "cannot be written in a pipeline"},
		{"undocumented parameter", newSource("fake", "v1.0.0", sdk.NewSource(func(undocumented) (sdk.Source, error) { return src(nil) })),
			nil, "Specification", `parameter "mode" has no description`},
		{"accepts a bad value", newSource("fake", "v1.0.0", sdk.NewSource(func(rejects) (sdk.Source, error) { return src(nil) })),
			[]Invalid{{Config: map[string]string{"mode": "zzz"}, Param: "mode"}}, "Configure/BadValues", "Configure accepts map[mode:zzz]"},
		{"an error that does not name the parameter", newSource("fake", "v1.0.0", sdk.NewSource(func(c rejects) (sdk.Source, error) {
			if c.Mode == "b" {
				return nil, errors.New("no")
			}
			return src(nil)
		})), []Invalid{{Config: map[string]string{"mode": "b"}, Param: "mode"}}, "Configure/BadValues", "does not name the parameter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := sourceRole(SourceSuite{Connector: tt.c, Invalid: tt.invalid})
			res := recordSuite(t, func(t tb) { runChecks(t, specChecks(r), nil, time.Minute) })
			res.mustFail(t, tt.check, tt.message)
		})
	}
}

func TestDestinationSuitePassesAGoodDestination(t *testing.T) {
	leakcheck.Check(t)
	is := is.New(t)
	st := &store{}
	res := runDestinationSuite(t, DestinationSuite{Connector: destinationConnector(destinationOK, st), ReadBack: st.readBack})
	is.Equal(res.failedChecks(), nil) // a good destination passes
	_, skipped := res.skipped["Suite/InProcess/RoundTrip"]
	is.True(!skipped) // with ReadBack, the round trip runs

	keyed := &store{keyed: true}
	res = runDestinationSuite(t, DestinationSuite{Connector: destinationConnector(destinationOK, keyed), ReadBack: keyed.readBack, Keyed: true})
	is.Equal(res.failedChecks(), nil) // a good keyed destination passes
	_, skipped = res.skipped["Suite/InProcess/RoundTrip/Keyed"]
	is.True(!skipped)
}

func TestDestinationSuiteFindsBrokenDestinations(t *testing.T) {
	tests := []struct {
		name    string
		bug     destinationBug
		check   string
		message string
	}{
		{"short write without an error", destinationShortWrite, "InProcess/WriteContract", "a short write must return an error"},
		{"short write over the protocol", destinationShortWrite, "InProcess/Batching/Size", "records but returned no error"},
		{"n larger than the records", destinationOvercounts, "InProcess/WriteContract", "n must be between 0 and the number of records"},
		{"acks what it did not write", destinationLies, "InProcess/RoundTrip", "records acknowledged are not in the destination's system"},
		{"writes twice", destinationDuplicates, "InProcess/RoundTrip", "written more than once"},
		{"modifies its input", destinationModifies, "InProcess/WriteContract", `modified the records it was given: record 0 (position "sdktest-`},
		{"corrupts what it writes", destinationCorrupts, "InProcess/RoundTrip", `): payload.after.name: wrote "sdktest-`},
		{"fails deletes", destinationRejectsDelete, "InProcess/Write/Operations", "a delete with raw data"},
		{"a lifecycle hook fails", destinationFailingHook, "InProcess/Lifecycle", "OnDeleted without Configure fails"},
		{"ignores deletes", destinationIgnoresDelete, "InProcess/RoundTrip/Keyed", "still there after it was deleted"},
		{"acks what it did not write, before a failure", destinationLies, "InProcess/Write/Failure", "records acknowledged are not in the destination's system"},
		{"panics, called directly", destinationPanics, "InProcess/WriteContract", "the connector panicked: assignment to entry in nil map at github.com/connkit/connkit/sdk/sdktest.(*fakeDestination).Write ("},
		{"panics, over the protocol", destinationPanics, "InProcess/RoundTrip", "connector panicked in Write: assignment to entry in nil map at github.com/connkit/connkit/sdk/sdktest.(*fakeDestination).Write ("},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keyed := tt.bug == destinationIgnoresDelete
			st := &store{keyed: keyed}
			// Stop waits for acks that never come when the positions are
			// changed: do not wait long.
			res := runDestinationSuite(t, DestinationSuite{Connector: destinationConnector(tt.bug, st), ReadBack: st.readBack, Keyed: keyed, Records: 10, Timeout: 5 * time.Second})
			res.mustFail(t, tt.check, tt.message)
		})
	}
}

// A Write that writes two records and fails the third on its own gets
// messages that say exactly that: what Write returned, which records were
// acknowledged and which nacked, with what; no record it did not write is
// taken for one it was acknowledged for.
func TestDestinationSuiteSaysWhatAFailingWriteDid(t *testing.T) {
	st := &store{}
	res := runDestinationSuite(t, DestinationSuite{Connector: destinationConnector(destinationFailsAfterTwo, st), ReadBack: st.readBack, Records: 10, Timeout: 5 * time.Second})
	res.mustFail(t, "InProcess/WriteContract", `Write of 5 records with a live context, nothing injected, returned n=2 and error "broken on purpose": records 1-2 written, record 3 failed`)
	// How many records the first Write gets depends on timing: the
	// account names the records acknowledged, then the one at fault.
	for check, says := range map[string]string{
		"InProcess/Write/Failure": `with a failure injected at record 7 of 8, in Writes of 4, the destination failed before it, on its own: `,
		"InProcess/RoundTrip":     `writing 10 records: `,
	} {
		_, messages := res.failures(check)
		if !regexp.MustCompile(regexp.QuoteMeta(says) + `records? 1(-\d+)? acknowledged; record \d+ nacked: record at position "sdktest-\d+": broken on purpose`).MatchString(messages) {
			t.Errorf("%s does not say which records were acknowledged and which failed:\n%s", check, messages)
		}
	}
	for _, check := range []string{"InProcess/WriteContract", "InProcess/Write/Failure"} {
		if _, messages := res.failures(check); strings.Contains(messages, "are not in the destination's system") {
			t.Errorf("%s takes records that were not written for written ones:\n%s", check, messages)
		}
	}
}

// The plugin binary is what Conduit runs: the suite drives it over the
// protocol and finds its bugs even when the Connector in the test is fine.
func TestPluginModeFindsBugsInTheBinary(t *testing.T) {
	t.Run("source", func(t *testing.T) {
		is := is.New(t)
		res := runSourceSuite(t, SourceSuite{Connector: sourceConnector(sourceOK, nil), Records: 10, Plugin: "./testdata/brokenplugin"})
		checks, messages := res.failures("Resume")
		is.Equal(checks, []string{"Suite/Plugin/Resume"}) // in process it resumes, the binary does not
		is.True(strings.Contains(messages, "again, which was acknowledged before the restart"))
	})
	t.Run("destination", func(t *testing.T) {
		is := is.New(t)
		res := runDestinationSuite(t, DestinationSuite{Connector: destinationConnector(destinationOK, &store{}), Records: 10, Plugin: "./testdata/brokenplugin"})
		checks, messages := res.failures("Batching/Size")
		is.Equal(checks, []string{"Suite/Plugin/Batching/Size"})
		is.True(strings.Contains(messages, "broke the Write contract"))
	})
}
