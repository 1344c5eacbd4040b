package sdktest

import (
	"context"
	"sync"
	"time"

	"github.com/connkit/connkit/sdk"
)

// FailAt returns d with a failure injected at record k (counted from 0
// across all Writes): the Write that reaches it writes the records before
// it through d and returns their count with err, as a destination whose
// system rejects that record must. It fails once; the records after it,
// and a retry of record k, go through d again. Use it to test code that
// calls a destination, and the SDK's handling of failed writes.
func FailAt(d sdk.Destination, k int, err error) sdk.Destination {
	return &failAt{Destination: d, k: k, err: err}
}

type failAt struct {
	sdk.Destination
	mu     sync.Mutex
	k      int
	seen   int
	failed bool
	err    error
}

func (f *failAt) Write(ctx context.Context, records []sdk.Record) (int, error) {
	f.mu.Lock()
	at := -1
	if !f.failed && f.k >= f.seen && f.k < f.seen+len(records) {
		at = f.k - f.seen
		f.failed = true
	}
	f.mu.Unlock()
	if at < 0 {
		n, err := f.Destination.Write(ctx, records)
		f.count(n)
		return n, err
	}
	n, err := 0, error(nil)
	if at > 0 {
		n, err = f.Destination.Write(ctx, records[:at])
		f.count(n)
		if err != nil {
			return n, err
		}
	}
	return n, f.err
}

func (f *failAt) count(n int) {
	f.mu.Lock()
	f.seen += n
	f.mu.Unlock()
}

func (f *failAt) Unwrap() sdk.Destination { return f.Destination }

// FailAfter returns d whose Writes fail with err, writing nothing, once d
// has been open for dur (counted from Open, or from the first Write if
// Open is not called): a system that goes away while a pipeline runs.
func FailAfter(d sdk.Destination, dur time.Duration, err error) sdk.Destination {
	return &failAfter{Destination: d, dur: dur, err: err}
}

type failAfter struct {
	sdk.Destination
	dur   time.Duration
	err   error
	mu    sync.Mutex
	start time.Time
}

func (f *failAfter) Open(ctx context.Context) error {
	f.begin()
	return f.Destination.Open(ctx)
}

func (f *failAfter) begin() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.start.IsZero() {
		f.start = time.Now()
	}
	return f.start
}

func (f *failAfter) Write(ctx context.Context, records []sdk.Record) (int, error) {
	if time.Since(f.begin()) >= f.dur {
		return 0, f.err
	}
	return f.Destination.Write(ctx, records)
}

func (f *failAfter) Unwrap() sdk.Destination { return f.Destination }

// DropAt returns d that calls drop, once, just before the Write that
// reaches record k (counted from 0 across all Writes). With a [Proxy]
// between the destination and its system, drop is [Proxy.Drop]: the
// connection breaks under that Write, and the test sees whether the
// destination retries or reports exactly what it committed.
func DropAt(d sdk.Destination, k int, drop func()) sdk.Destination {
	return &dropAt{Destination: d, k: k, drop: drop}
}

type dropAt struct {
	sdk.Destination
	mu      sync.Mutex
	k, seen int
	dropped bool
	drop    func()
}

func (d *dropAt) Write(ctx context.Context, records []sdk.Record) (int, error) {
	d.mu.Lock()
	if !d.dropped && d.k < d.seen+len(records) {
		d.dropped = true
		d.drop()
	}
	d.seen += len(records)
	d.mu.Unlock()
	return d.Destination.Write(ctx, records)
}

func (d *dropAt) Unwrap() sdk.Destination { return d.Destination }
