package conduit

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
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
