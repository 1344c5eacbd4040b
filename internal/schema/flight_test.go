package schema

import (
	"context"
	"errors"
	"testing"

	"github.com/matryer/is"
)

func constant(v int) func() (int, error) { return func() (int, error) { return v, nil } }

// A full cache makes room with the first entry not used since the clock
// last passed it; the entries in use stay.
func TestFlightsEvictUnused(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	f := flights[string, int]{limit: 3}
	for i, k := range []string{"a", "b", "c"} {
		v, err := f.get(ctx, k, constant(i))
		is.NoErr(err)
		is.Equal(v, i)
	}
	_, _ = f.get(ctx, "a", constant(-1)) // a hit: kept, not computed again
	f.put("d", 3)                        // evicts b, the first unused
	is.Equal(f.len(), 3)
	_, ok := f.lookup("b")
	is.True(!ok)
	for k, want := range map[string]int{"a": 0, "c": 2, "d": 3} {
		v, ok := f.lookup(k)
		is.True(ok)
		is.Equal(v, want)
	}
}

// A failure leaves a free slot behind, taken before any entry is evicted,
// and set replaces a value in its own slot.
func TestFlightsReuseSlots(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	f := flights[string, int]{limit: 2}
	_, _ = f.get(ctx, "a", constant(1))
	_, err := f.get(ctx, "b", func() (int, error) { return 0, errors.New("no") })
	is.True(err != nil)
	f.put("c", 3)
	f.set("c", 4)
	is.Equal(f.len(), 2)
	v, ok := f.lookup("a")
	is.True(ok)
	is.Equal(v, 1)
	v, ok = f.lookup("c")
	is.True(ok)
	is.Equal(v, 4)
	is.Equal(len(f.clock), 2)
}

// When every entry is in use, the clock still finds room, and the cache
// never keeps more than its limit.
func TestFlightsStayWithinLimit(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	f := flights[int, int]{limit: 10}
	for i := range 1000 {
		_, _ = f.get(ctx, i, constant(i))
		for j := max(0, i-20); j <= i; j++ {
			f.lookup(j) // every entry used since the last sweep
		}
		is.True(f.len() <= 10)
	}
}
