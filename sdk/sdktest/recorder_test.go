package sdktest

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

// recorder is a tb that records which checks fail and what they say, so
// that the kit's tests can run a suite on a broken connector and inspect
// the verdict. Fatalf and Skipf end the check's goroutine, as testing does.
type recorder struct {
	t      *testing.T // the real test, for temporary directories and logs
	name   string
	root   *results
	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	failed   bool
	cleanups []func()
}

// results are every check's messages, by the check's full name.
type results struct {
	mu      sync.Mutex
	fails   map[string][]string
	logs    map[string][]string
	skipped map[string]string
	ran     []string
}

func newRecorder(t *testing.T) (*recorder, *results) {
	res := &results{fails: map[string][]string{}, logs: map[string][]string{}, skipped: map[string]string{}}
	ctx, cancel := context.WithCancel(t.Context())
	return &recorder{t: t, root: res, ctx: ctx, cancel: cancel}, res
}

func (r *recorder) Helper()                  {}
func (r *recorder) Name() string             { return r.name }
func (r *recorder) TempDir() string          { return r.t.TempDir() }
func (r *recorder) Context() context.Context { return r.ctx }

func (r *recorder) Logf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.t.Logf("%s: %s", r.name, msg)
	r.keep(r.root.logs, msg)
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	r.failed = true
	r.mu.Unlock()
	msg := fmt.Sprintf(format, args...)
	r.t.Logf("%s fails: %s", r.name, msg)
	r.keep(r.root.fails, msg)
}

// keep adds msg to r's messages in the root's list of them, logs or fails.
func (r *recorder) keep(list map[string][]string, msg string) {
	r.root.mu.Lock()
	list[r.name] = append(list[r.name], msg)
	r.root.mu.Unlock()
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

func (r *recorder) Skipf(format string, args ...any) {
	r.root.mu.Lock()
	r.root.skipped[r.name] = fmt.Sprintf(format, args...)
	r.root.mu.Unlock()
	runtime.Goexit()
}

func (r *recorder) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}

func (r *recorder) Cleanup(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cleanups = append(r.cleanups, f)
}

func (r *recorder) Run(name string, f func(tb)) bool {
	full := name
	if r.name != "" {
		full = r.name + "/" + name
	}
	ctx, cancel := context.WithCancel(r.ctx)
	child := &recorder{t: r.t, name: full, root: r.root, ctx: ctx, cancel: cancel}
	r.root.mu.Lock()
	r.root.ran = append(r.root.ran, full)
	r.root.mu.Unlock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer child.finish()
		f(child)
	}()
	<-done
	if child.Failed() {
		r.mu.Lock()
		r.failed = true
		r.mu.Unlock()
	}
	return !child.Failed()
}

// finish runs the cleanups, last first, after cancelling the context, as
// testing does.
func (r *recorder) finish() {
	r.cancel()
	r.mu.Lock()
	cleanups := r.cleanups
	r.cleanups = nil
	r.mu.Unlock()
	for _, f := range slices.Backward(cleanups) {
		f()
	}
}

// failed returns the checks that failed whose names end in suffix, and
// their messages joined.
func (res *results) failures(suffix string) (checks []string, messages string) {
	res.mu.Lock()
	defer res.mu.Unlock()
	var msgs []string
	for name, m := range res.fails {
		if strings.HasSuffix(name, suffix) {
			checks = append(checks, name)
			msgs = append(msgs, m...)
		}
	}
	slices.Sort(checks)
	return checks, strings.Join(msgs, "\n")
}

// logged returns what the check named check logged, joined.
func (res *results) logged(check string) string {
	res.mu.Lock()
	defer res.mu.Unlock()
	return strings.Join(res.logs[check], "\n")
}

// mustFail fails t unless check failed, saying message.
func (res *results) mustFail(t *testing.T, check, message string) {
	t.Helper()
	checks, messages := res.failures(check)
	if len(checks) == 0 {
		t.Fatalf("%s did not fail", check)
	}
	if !strings.Contains(messages, message) {
		t.Errorf("%s failed, saying\n%s\nwhich does not say %q", check, messages, message)
	}
}

func (res *results) failedChecks() []string {
	res.mu.Lock()
	defer res.mu.Unlock()
	var out []string
	for name := range res.fails {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}
