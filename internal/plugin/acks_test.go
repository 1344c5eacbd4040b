package plugin

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/matryer/is"
)

type emptyError struct{}

func (emptyError) Error() string { return "" }

// TestSettle: a Write's outcome becomes one ack per record, in order: the
// records written are acked, the others nacked with an error that says
// why and keeps the connector's error.
func TestSettle(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name     string
		n        int
		err      error
		acked    int    // leading records acked
		nackText string // what each nack says, if any
	}{
		{"all written", 3, nil, 3, ""},
		{"all written with an error", 3, boom, 3, ""},
		{"none written", 0, boom, 0, "boom"},
		{"first written", 1, boom, 1, "boom"},
		{"all but last", 2, boom, 2, "boom"},
		{"short write without error", 1, nil, 1, "wrote 1 of 3 records but returned no error"},
		{"nothing written, no error", 0, nil, 0, "wrote 0 of 3 records but returned no error"},
		{"n too large", 4, nil, 0, "returned n=4 for 3 records, expected 0 <= n <= 3"},
		{"n negative", -1, boom, 0, "returned n=-1 for 3 records, expected 0 <= n <= 3 (Write error: boom)"},
		{"error with empty message", 1, emptyError{}, 1, "destination returned an error with an empty message (plugin.emptyError)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			recs := records("a", "b", "c")
			acks, _, nackErr := settle(positionsOf(recs), tt.n, tt.err)
			is.Equal(len(acks), len(recs))
			for i, a := range acks {
				is.Equal(string(a.Position), string(recs[i].Position)) // acks in record order
				if i < tt.acked {
					is.Equal(a.Error, "")
					continue
				}
				is.True(a.Error != "")
				is.True(strings.Contains(a.Error, tt.nackText))
			}
			is.Equal(nackErr != nil, tt.acked < len(recs))
			if tt.err != nil && nackErr != nil && tt.err.Error() != "" {
				is.True(errors.Is(nackErr, tt.err)) // the connector's error is kept
			}
		})
	}
}

// TestSettleEveryOutcome: for every n from -2 to len+2, with and without
// an error, each record is acked exactly once, positives strictly before
// negatives.
func TestSettleEveryOutcome(t *testing.T) {
	for size := 0; size <= 4; size++ {
		for n := -2; n <= size+2; n++ {
			for _, err := range []error{nil, fmt.Errorf("failed at %d", n)} {
				recs := records(make([]string, size)...)
				for i := range recs {
					recs[i].Position = []byte(fmt.Sprint(i))
				}
				acks, _, _ := settle(positionsOf(recs), n, err)
				if len(acks) != size {
					t.Fatalf("size %d n %d: %d acks", size, n, len(acks))
				}
				seenNack := false
				positives := 0
				for _, a := range acks {
					if a.Error != "" {
						seenNack = true
					} else if seenNack {
						t.Fatalf("size %d n %d err %v: positive ack after a nack", size, n, err)
					} else {
						positives++
					}
				}
				if valid := n >= 0 && n <= size; valid && positives != n {
					t.Fatalf("size %d n %d err %v: %d positive acks", size, n, err, positives)
				} else if !valid && positives != 0 {
					t.Fatalf("size %d n %d: out-of-range n acked %d records", size, n, positives)
				}
			}
		}
	}
}
