package conduit

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"
)

func TestProblems(t *testing.T) {
	race := `{"level":"error","error":"task e2e:generator: failed to read from source: plugin is not running","message":"pipeline stopped"}`
	slow := `{"level":"warn","message":"slow"}`
	for _, tt := range []struct {
		name string
		log  []string
		want []string
	}{
		{"info only", []string{`{"level":"info","message":"pipeline started"}`}, nil},
		{"a fresh setup", []string{`{"level":"warn","message":"Using in-memory store"}`}, nil},
		{"a warning", []string{slow}, []string{slow}},
		{"the v2 teardown race while running", []string{race}, []string{race}},
		{"the v2 teardown race after a graceful stop began", []string{
			`{"level":"info","message":"stopping 1 pipelines gracefully"}`, race,
		}, nil},
		{"other problems after a graceful stop began", []string{
			`{"level":"info","message":"stopping 1 pipelines gracefully"}`, slow,
		}, []string{slow}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := &Server{LogPath: filepath.Join(t.TempDir(), "conduit.log")}
			if err := os.WriteFile(s.LogPath, []byte(strings.Join(tt.log, "\n")+"\nnot json\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if got := s.Problems(); !slices.Equal(got, tt.want) {
				t.Errorf("Problems() = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestMetricLabelsInAnyOrder reads a series whatever order its labels come
// in and whatever labels a later Conduit adds (v0.18 added component_id,
// which sorts first).
func TestMetricLabelsInAnyOrder(t *testing.T) {
	is := is.New(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `# HELP conduit_connector_bytes Bytes.
conduit_connector_bytes_count{component_id="e2e:destination",pipeline_name="e2e",plugin="standalone:log",type="destination"} 10000
conduit_connector_bytes_count{pipeline_name="e2e",plugin="builtin:generator",type="source"} 7
conduit_pipeline_execution_duration_seconds_count{pipeline_name="other"} 3
conduit_pipeline_execution_duration_seconds_sum{pipeline_name="e2e"} 1.5
conduit_pipeline_execution_duration_seconds_count{pipeline_name="e2e"} 10000
`)
	}))
	defer srv.Close()
	s := &Server{URL: srv.URL}
	is.Equal(s.Metric("conduit_connector_bytes_count", "type=destination", "plugin=standalone:log", "pipeline_name=e2e"), 10000.0)
	is.Equal(s.Metric("conduit_connector_bytes_count", "type=source"), 7.0)
	is.Equal(s.Metric("conduit_connector_bytes_count", "type=processor"), -1.0)
	count, sum := s.Latency("e2e")
	is.Equal(count, 10000.0)
	is.Equal(sum, 1.5)
}

// StopPipeline asks Conduit's API to stop the pipeline gracefully and
// waits for the status that says how it ended.
func TestStopPipeline(t *testing.T) {
	for _, tt := range []struct {
		name     string
		code     int      // the answer to the stop request
		statuses []string // the pipeline's status at each look, the last repeated
		want     string   // in the error; empty: none
	}{
		{"stopped after a while", http.StatusOK, []string{"STATUS_RUNNING", "STATUS_RUNNING", "STATUS_STOPPED"}, ""},
		{"degraded while it stopped", http.StatusOK, []string{"STATUS_RUNNING", "STATUS_DEGRADED"}, "pipeline degraded while it stopped: acks out of order"},
		{"refused", http.StatusBadRequest, []string{"STATUS_DEGRADED"}, "400 Bad Request: {\"code\":9}"},
		{"never stops", http.StatusOK, []string{"STATUS_RUNNING"}, "not stopped within 200ms: STATUS_RUNNING"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			var stops, looks atomic.Int32 // the handler's, read by the test
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch {
				case r.Method == http.MethodPost && r.URL.Path == "/v1/pipelines/p/stop":
					stops.Add(1)
					w.WriteHeader(tt.code)
					fmt.Fprint(w, `{"code":9}`)
				case r.Method == http.MethodGet && r.URL.Path == "/v1/pipelines/p":
					n := int(looks.Add(1))
					status := tt.statuses[min(n, len(tt.statuses))-1]
					errText := ""
					if status == "STATUS_DEGRADED" {
						errText = "acks out of order"
					}
					fmt.Fprintf(w, `{"id":"p","state":{"status":%q,"error":%q}}`, status, errText)
				default:
					http.NotFound(w, r)
				}
			}))
			defer srv.Close()
			s := &Server{URL: srv.URL, done: make(chan struct{})}
			err := s.StopPipeline("p", 200*time.Millisecond)
			is.Equal(stops.Load(), int32(1))
			if tt.want == "" {
				is.NoErr(err)
				is.Equal(int(looks.Load()), len(tt.statuses)) // until it said STATUS_STOPPED
				return
			}
			is.True(err != nil)
			is.True(strings.Contains(err.Error(), tt.want)) // the error says why
			is.Equal(errors.Is(err, ErrDegraded), tt.name == "degraded while it stopped")
		})
	}
}
