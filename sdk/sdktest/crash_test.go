package sdktest

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/connkit/connkit/sdk"
	"github.com/matryer/is"
)

// onlyCrashWrite and onlyCrashRead skip every check of their suite but the
// crash check.
var (
	onlyCrashWrite = map[string]string{
		"OpenTeardown": "not under test", "Lifecycle": "not under test", "Specify": "not under test",
		"Stop": "not under test", "Batching": "not under test", "Write": "not under test",
		"RoundTrip": "not under test", "WriteContract": "not under test",
	}
	onlyCrashRead = map[string]string{
		"OpenTeardown": "not under test", "Lifecycle": "not under test", "Specify": "not under test",
		"Read": "not under test", "Resume": "not under test", "Stop": "not under test",
		"Batching": "not under test",
	}
)

// readLines reads back the broken plugin's file: one payload a line.
func readLines(path string) func(context.Context) ([]sdk.Record, error) {
	return func(context.Context) ([]sdk.Record, error) {
		data, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		var out []sdk.Record
		for line := range strings.Lines(string(data)) {
			if !json.Valid([]byte(line)) {
				return nil, errors.New("not JSON: " + line)
			}
			out = append(out, sdk.Record{Payload: sdk.Change{After: sdk.RawData(line)}})
		}
		return out, err
	}
}

// crashDestination runs the destination crash check on the broken plugin
// with bug, declaring delivery.
func crashDestination(t *testing.T, bug string, delivery Delivery) *results {
	t.Helper()
	path := filepath.Join(t.TempDir(), "out.jsonl")
	return runDestinationSuite(t, DestinationSuite{
		Connector: destinationConnector(destinationOK, &store{}),
		Config:    map[string]string{"bug": bug, "path": path},
		Plugin:    "./testdata/brokenplugin",
		ReadBack:  readLines(path),
		Delivery:  delivery,
		Crash:     Crashes{Records: 120},
		Skip:      onlyCrashWrite,
	})
}

func crashSource(t *testing.T, bug string) *results {
	t.Helper()
	return runSourceSuite(t, SourceSuite{
		Connector: sourceConnector(sourceOK, nil),
		Config:    map[string]string{"bug": bug},
		Plugin:    "./testdata/brokenplugin",
		Crash:     Crashes{Records: 60},
		Skip:      onlyCrashRead,
	})
}

func TestCrashWrite(t *testing.T) {
	t.Run("a destination that writes before it acknowledges passes", func(t *testing.T) {
		is := is.New(t)
		res := crashDestination(t, "none", AtLeastOnce)
		is.Equal(res.failedChecks(), nil)
		log := res.logged("Suite/Plugin/Crash/Write")
		// The kill points are 2/15, 1/2, 13/15 of 120; batches of 16 wait
		// to fill, so the kills come with 0, 12 and 8 records in flight,
		// and the batch of 16 before each has its acks lost with Conduit.
		is.True(strings.Contains(log, `kill -9 at record 16 of the run, 0 acknowledged: 16 records sent and not acknowledged (or whose acknowledgement was lost) were due again after the restart: "sdktest-`))
		is.True(strings.Contains(log, "kill -9 at record 60 of the run, 32 acknowledged: 28 records"))
		is.True(strings.Contains(log, "kill -9 at record 104 of the run, 80 acknowledged: 24 records"))
		is.True(strings.Contains(log, "3 kills, 68 records due again in all"))
		// Written once before the kill and again after it: an at-least-once
		// destination's duplicates, reported.
		is.True(strings.Contains(log, "48 records are in the destination's system more than once after the kills, as AtLeastOnce allows"))
	})
	t.Run("a destination that loses acknowledged records fails", func(t *testing.T) {
		res := crashDestination(t, "lose", AtLeastOnce)
		res.mustFail(t, "Plugin/Crash/Write", `records acknowledged before a kill -9 are not in the destination's system after the restart: "sdktest-`)
		res.mustFail(t, "Plugin/Crash/Write", "acknowledged before the kill at record 60)")
	})
	t.Run("duplicates fail a destination that declares ExactlyOnce", func(t *testing.T) {
		res := crashDestination(t, "replay", ExactlyOnce)
		res.mustFail(t, "Plugin/Crash/Write", `more than once after the kills, though DestinationSuite.Delivery is ExactlyOnce: "sdktest-`)
	})
	t.Run("duplicates fail a destination that declares Idempotent", func(t *testing.T) {
		res := crashDestination(t, "replay", Idempotent)
		res.mustFail(t, "Plugin/Crash/Write", "though DestinationSuite.Delivery is Idempotent")
	})
	t.Run("duplicates are reported for a destination that declares AtLeastOnce", func(t *testing.T) {
		is := is.New(t)
		res := crashDestination(t, "replay", AtLeastOnce)
		is.Equal(res.failedChecks(), nil)
		is.True(strings.Contains(res.logged("Suite/Plugin/Crash/Write"), "records are in the destination's system more than once after the kills, as AtLeastOnce allows"))
	})
	t.Run("without ReadBack it is skipped", func(t *testing.T) {
		is := is.New(t)
		res := runDestinationSuite(t, DestinationSuite{Connector: destinationConnector(destinationOK, &store{}), Plugin: "./testdata/brokenplugin", Config: map[string]string{"bug": "none"}, Skip: onlyCrashWrite})
		is.True(strings.Contains(res.skipped["Suite/Plugin/Crash/Write"], "set DestinationSuite.ReadBack"))
	})
	t.Run("bad kill points are named", func(t *testing.T) {
		res := runDestinationSuite(t, DestinationSuite{Connector: destinationConnector(destinationOK, &store{}), Plugin: "./testdata/brokenplugin",
			Config: map[string]string{"bug": "none"}, ReadBack: readLines(filepath.Join(t.TempDir(), "f")), Crash: Crashes{Records: 20, At: []int{10, 5}}, Skip: onlyCrashWrite})
		res.mustFail(t, "Plugin/Crash/Write", "DestinationSuite.Crash.At[1] = 5: want increasing record counts between 1 and Crash.Records-1 (19)")
	})
}

func TestCrashRead(t *testing.T) {
	t.Run("a source that resumes from its position passes", func(t *testing.T) {
		is := is.New(t)
		res := crashSource(t, "none")
		is.Equal(res.failedChecks(), nil)
		log := res.logged("Suite/Plugin/Crash/Read")
		// The acks trail the reads by crashAckLag records: at least those
		// come again after each kill, the first of them right after the
		// kill point.
		is.True(strings.Contains(log, `kill -9 at record 8 of the run, 8 acknowledged: `))
		is.True(strings.Contains(log, `were due again after the restart: "9", "10", "11", "12", "13" and `))
	})
	t.Run("a source that skips records after a restart fails", func(t *testing.T) {
		res := crashSource(t, "lose")
		res.mustFail(t, "Plugin/Crash/Read", `after a kill -9 and Open("8"), the source delivered "11" where "9" was expected: it was sent before the kill and never acknowledged`)
	})
	t.Run("a source that delivers acknowledged records again fails", func(t *testing.T) {
		res := crashSource(t, "")
		res.mustFail(t, "Plugin/Crash/Read", `after a kill -9 and Open("8"), the source delivered "1" again, which was acknowledged before the kill at record 8`)
	})
	t.Run("without Plugin it is skipped", func(t *testing.T) {
		is := is.New(t)
		res := runSourceSuite(t, SourceSuite{Connector: sourceConnector(sourceOK, nil), Skip: onlyCrashRead})
		is.True(strings.Contains(res.skipped["Suite/Plugin"], "crash checks"))
	})
}
