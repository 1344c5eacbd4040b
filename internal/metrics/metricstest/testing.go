package metricstest

import (
	"context"
	"testing"
	"time"

	"github.com/connkit/connkit/internal/metrics"
)

// Serve returns ctx carrying the metrics of a connector instance with
// labels, as the plugin server passes them, and the address they are
// served at until the test ends.
func Serve(t testing.TB, ctx context.Context, labels metrics.Labels) (context.Context, string) {
	t.Helper()
	set := metrics.New(labels)
	address, stop, err := set.Serve("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return metrics.NewContext(ctx, set), address
}

// Sample returns the value of the one sample of name with labels (besides
// the instance's) at address, failing the test if there is not exactly one.
func Sample(t testing.TB, address, name string, labels ...string) float64 {
	t.Helper()
	v, ok := lookup(t, address, name, labels...)
	if !ok {
		t.Fatalf("no sample %s%v at %s", name, labels, address)
	}
	return v
}

// Eventually waits up to a minute for f to hold of the one sample of name
// with labels at address and returns its value; what says in the
// failure what the value never became.
func Eventually(t testing.TB, address, what string, f func(float64) bool, name string, labels ...string) float64 {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		v, ok := lookup(t, address, name, labels...)
		if ok && f(v) {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s stayed at %v, never %s", name, v, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Want is a sample a test expects: its name, its labels, each given as
// name=value, and its value.
type Want struct {
	Name   string
	Labels []string
	Value  float64
}

// Expect scrapes address once and fails t for each of wants that it does
// not serve with that value.
func Expect(t testing.TB, address string, wants []Want) {
	t.Helper()
	got, err := Scrape(address)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range wants {
		if v, ok := got.Get(w.Name, w.Labels...); !ok || v != w.Value {
			t.Errorf("%s = %v (served: %t), want %v", Key(w.Name, w.Labels...), v, ok, w.Value)
		}
	}
}

func lookup(t testing.TB, address, name string, labels ...string) (float64, bool) {
	t.Helper()
	got, err := Scrape(address)
	if err != nil {
		t.Fatal(err)
	}
	v, n := got.Sum(name, labels...)
	return v, n == 1
}
