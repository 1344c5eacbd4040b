package plugin

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/batcher"
	"github.com/connkit/connkit/internal/leakcheck"
	"github.com/matryer/is"
)

// TestDestinationLifecycle runs a destination as Conduit does: records
// come in messages and are acked in order, Stop returns once the last is
// acked, and Teardown follows Open.
func TestDestinationLifecycle(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		dst := &fakeDestination{}
		r := newDestinationRun(t, openDestination(t, dst, batcher.Policy{}, Retry{})).run()

		r.st.in <- pconnector.DestinationRunRequest{Records: records("1")}
		synctest.Wait() // written before the next message comes
		r.st.in <- pconnector.DestinationRunRequest{Records: records("2", "3")}
		is.Equal(ackTexts(<-r.st.out, <-r.st.out), []string{"1", "2", "3"})

		_, err := r.d.Stop(t.Context(), pconnector.DestinationStopRequest{LastPosition: opencdc.Position("3")})
		is.NoErr(err)
		r.end()
		is.Equal(dst.written, []string{"1", "2", "3"})
		is.Equal(dst.calls, []string{"Open", "Teardown"})
	})
}

type dbError struct{ msg string }

func (e *dbError) Error() string { return e.msg } // panics on a nil *dbError

// TestDestinationWriteOutcomes sends a message of three records, which
// Write writes alone, and a message of one, and checks the acks of each
// outcome of the first Write.
func TestDestinationWriteOutcomes(t *testing.T) {
	var typedNil *dbError
	tests := []struct {
		name  string
		write func([]opencdc.Record) (int, error)
		want  []string // acks of the message "a", "b", "c", then of the message "d"
	}{
		{"success", nil, []string{"a", "b", "c", "d"}},
		{"fails at index 1", func(r []opencdc.Record) (int, error) {
			if len(r) == 3 {
				return 1, errors.New("constraint violated")
			}
			return len(r), nil
		}, []string{"a", `b!record at position "b": constraint violated`, `c!not attempted: the record at position "b" failed: constraint violated`, "d"}},
		{"panics", func(r []opencdc.Record) (int, error) {
			if len(r) == 3 {
				panic("write exploded")
			}
			return len(r), nil
		}, []string{"a!connector panicked in Write: write exploded", "b!connector panicked in Write: write exploded", "c!connector panicked in Write: write exploded", "d"}},
		// A typed nil error whose Error method panics: the panic is the
		// Write's, and the plugin goes on.
		{"returns an error whose Error method panics", func(r []opencdc.Record) (int, error) {
			if len(r) == 3 {
				return 0, typedNil
			}
			return len(r), nil
		}, []string{
			"a!connector panicked in Write: runtime error: invalid memory address or nil pointer dereference",
			"b!connector panicked in Write: runtime error: invalid memory address or nil pointer dereference",
			"c!connector panicked in Write: runtime error: invalid memory address or nil pointer dereference",
			"d",
		}},
		// Write must not change its records; if it does, acks still name
		// the records Conduit sent.
		{"rewrites positions", func(r []opencdc.Record) (int, error) {
			for i := range r {
				r[i].Position = opencdc.Position("changed")
			}
			return len(r), nil
		}, []string{"a", "b", "c", "d"}},
		{"short write without error", func(r []opencdc.Record) (int, error) { return len(r) - 1, nil },
			[]string{"a", "b", "c!destination broke the Write contract: wrote 2 of 3 records but returned no error", "d!destination broke the Write contract: wrote 0 of 1 records but returned no error"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			leakcheck.Check(t)
			synctest.Test(t, func(t *testing.T) {
				is := is.New(t)
				w := &writeLog{t: t, start: time.Now(), outcome: tt.write}
				r := newDestinationRun(t, openDestination(t, w, batcher.Policy{}, Retry{})).run()
				r.st.in <- pconnector.DestinationRunRequest{Records: records("a", "b", "c")}
				synctest.Wait() // written alone, before the next message comes
				r.st.in <- pconnector.DestinationRunRequest{Records: records("d")}
				is.Equal(ackTexts(<-r.st.out, <-r.st.out), tt.want)
				is.Equal(w.got(), []string{"[a b c]@0s", "[d]@0s"})
				r.end()
			})
		})
	}
}
