package sdktest

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/connkit/connkit/sdk"
	"github.com/matryer/is"
)

// splitting is a fake destination that takes concurrent Writes, split as
// split says.
type splitting struct {
	fakeDestination
	split sdk.Split
}

func (s *splitting) WriteSplit() sdk.Split { return s.split }

// hidden is a layer without Unwrap: the SDK sees only its own methods.
type hidden struct{ sdk.Destination }

// TestWriteLogFindsWhatTheDestinationTakes: the log learns from the public
// interfaces, through the layers' Unwrap as the SDK does, and from
// sdk.write.concurrency as configured or defaulted, whether Writes may run
// together and whether a key keeps to one.
func TestWriteLogFindsWhatTheDestinationTakes(t *testing.T) {
	byKey := &splitting{split: sdk.SplitByKey}
	freely := &splitting{split: sdk.SplitFreely}
	injected := errors.New("injected")
	tests := []struct {
		name       string
		d          sdk.Destination
		defaults   map[string]string
		cfg        map[string]string
		oneAtATime bool
		byKey      bool
	}{
		{"one batch at a time", &fakeDestination{}, nil, nil, true, false},
		{"by key, auto", byKey, nil, nil, false, true},
		{"by key, under a fault", FailAt(byKey, 3, injected), nil, nil, false, true},
		{"freely, one configured", freely, nil, map[string]string{"sdk.write.concurrency": "1"}, true, false},
		{"freely, four configured", freely, nil, map[string]string{"sdk.write.concurrency": "4"}, false, false},
		{"by key, one by default", byKey, map[string]string{"sdk.write.concurrency": "1"}, nil, true, true},
		{"hidden under a layer", hidden{byKey}, nil, nil, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			c := destinationConnector(destinationOK, &store{})
			c.DestinationDefaults = tt.defaults
			log := newWriteLog(c)
			log.configured(tt.cfg)
			log.observe(tt.d)
			is.Equal(log.oneAtATime(), tt.oneAtATime)
			is.Equal(log.byKey, tt.byKey)
		})
	}
}

// blocking is a destination whose Writes wait, once started, until
// release is closed; it takes one Write at a time.
type blocking struct {
	started *sync.WaitGroup
	release chan struct{}
}

func (b *blocking) Open(context.Context) error     { return nil }
func (b *blocking) Teardown(context.Context) error { return nil }
func (b *blocking) Write(_ context.Context, records []sdk.Record) (int, error) {
	b.started.Done()
	<-b.release
	return len(records), nil
}

// blockingSplit is blocking as a concurrent destination that splits as
// split says.
type blockingSplit struct {
	*blocking
	split sdk.Split
}

func (b blockingSplit) WriteSplit() sdk.Split { return b.split }

// TestCheckWritesFindsWritesRunningTogether: two Writes that run together
// fail the check when the destination takes one at a time, and, when it
// splits by key, if they share a key.
func TestCheckWritesFindsWritesRunningTogether(t *testing.T) {
	tests := []struct {
		name    string
		split   sdk.Split // 0: not a concurrent destination
		keys    [2]string
		message string // "": the check passes
	}{
		{"one at a time", 0, [2]string{"a", "b"}, "Write was called concurrently with itself"},
		{"a key in two Writes", sdk.SplitByKey, [2]string{"a", "a"}, `had records with the key "a"`},
		{"keys apart", sdk.SplitByKey, [2]string{"a", "b"}, ""},
		{"a key in two Writes, freely", sdk.SplitFreely, [2]string{"a", "a"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			b := &blocking{started: &sync.WaitGroup{}, release: make(chan struct{})}
			b.started.Add(2)
			var d sdk.Destination = b
			if tt.split != 0 {
				d = blockingSplit{b, tt.split}
			}
			log := newWriteLog(destinationConnector(destinationOK, &store{}))
			o := log.observe(d)
			var done sync.WaitGroup
			for _, k := range tt.keys {
				done.Go(func() {
					_, _ = o.Write(t.Context(), []sdk.Record{{Key: sdk.RawData(k), Position: sdk.Position(k)}})
				})
			}
			b.started.Wait() // both run
			close(b.release)
			done.Wait()
			rec, res := newRecorder(t)
			rec.Run("Writes", func(t tb) { checkWrites(t, log, 2, 0, "the test's") })
			rec.finish()
			if tt.message == "" {
				is.Equal(res.failedChecks(), nil) // Writes may run together
				return
			}
			res.mustFail(t, "Writes", tt.message)
		})
	}
}
