package middleware

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/matryer/is"
)

// timedWrites is a destination that notes, for each Write, how many records
// it got and when (in synctest's virtual time, from start).
type timedWrites struct {
	base
	start time.Time
	sizes []int
	at    []time.Duration
}

func (w *timedWrites) Write(_ context.Context, r []opencdc.Record) (int, error) {
	w.sizes = append(w.sizes, len(r))
	w.at = append(w.at, time.Since(w.start))
	return len(r), nil
}

func records(n int) []opencdc.Record {
	out := make([]opencdc.Record, n)
	for i := range out {
		out[i].Position = opencdc.Position(strconv.Itoa(i))
	}
	return out
}

func TestLimitRateSplitsWritesLargerThanTheBurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		w := &timedWrites{start: time.Now()}
		n, err := limitWith(10, 2)(w).Write(t.Context(), records(5))
		is.NoErr(err)
		is.Equal(n, 5)
		is.Equal(w.sizes, []int{2, 2, 1})
		// The first two go at once, on the burst; then one record a tenth
		// of a second, and no record early.
		is.Equal(w.at, []time.Duration{0, 200 * time.Millisecond, 300 * time.Millisecond})
	})
}

func TestLimitRateStopsWaitingWhenTheContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		w := &timedWrites{start: time.Now()}
		ctx, cancel := context.WithCancel(t.Context())
		// Halfway to the third record's turn: at a second, the second
		// record's turn and the cancellation would come at the same
		// instant, in either order.
		time.AfterFunc(1500*time.Millisecond, cancel)
		n, err := limitWith(1, 1)(w).Write(ctx, records(5))
		is.True(errors.Is(err, context.Canceled))
		is.Equal(n, 2) // the one on the burst, and one a second later
		is.Equal(time.Since(w.start), 1500*time.Millisecond)
	})
}

// TestLimitRateAboveMaxInt takes a rate per second above the largest int
// (a pipeline's way of saying "no real limit"): the burst derived from it
// must still be a usable number of records.
func TestLimitRateAboveMaxInt(t *testing.T) {
	for _, perSecond := range []float64{1e19, 1e300} {
		t.Run(strconv.FormatFloat(perSecond, 'g', -1, 64), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				is := is.New(t)
				w := &timedWrites{start: time.Now()}
				d := limitWith(perSecond, 0)(w)
				for range 2 {
					n, err := d.Write(t.Context(), records(3))
					is.NoErr(err)
					is.Equal(n, 3)
				}
				is.Equal(w.sizes, []int{3, 3})
			})
		})
	}
}

// overclaims is a buggy destination: its first Write claims one record
// more than it was given. It keeps the positions it really got.
type overclaims struct {
	base
	calls int
	got   []string
}

func (o *overclaims) Write(_ context.Context, r []opencdc.Record) (int, error) {
	o.calls++
	for _, rec := range r {
		o.got = append(o.got, string(rec.Position))
	}
	if o.calls == 1 {
		return len(r) + 1, nil
	}
	return len(r), nil
}

// TestLimitRateKeepsTheWriteContract has the rate limit split a batch for a
// destination that claims more records than one Write gave it: the claim
// must not count records of the next chunk as written, which the SDK would
// then ack without the destination ever seeing them.
func TestLimitRateKeepsTheWriteContract(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		o := &overclaims{}
		n, err := limitWith(1000, 2)(o).Write(t.Context(), records(4))
		is.True(err != nil)
		is.True(strings.Contains(err.Error(), "n=3 for 2 records"))
		is.True(n <= len(o.got)) // no record acked that was not written
		is.Equal(n, 0)           // the claim confirms nothing of its chunk
	})
}
