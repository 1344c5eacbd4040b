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

// TestSettle: a Write's outcome says how many leading records are acked,
// and the others' error, which says why and keeps the connector's error.
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
			acked, nackErr := judge(3, tt.n, tt.err)
			is.Equal(acked, tt.acked)
			is.Equal(nackErr != nil, tt.acked < 3)
			if nackErr != nil {
				is.True(strings.Contains(errorText(nackErr), tt.nackText))
			}
			if tt.err != nil && nackErr != nil && tt.err.Error() != "" {
				is.True(errors.Is(nackErr, tt.err)) // the connector's error is kept
			}
		})
	}
}

// TestSettleEveryOutcome: for every n from -2 to len+2, with and without
// an error, the leading records confirmed are n if n is valid and none
// otherwise, and the rest get an error.
func TestSettleEveryOutcome(t *testing.T) {
	for size := 0; size <= 4; size++ {
		for n := -2; n <= size+2; n++ {
			for _, err := range []error{nil, fmt.Errorf("failed at %d", n)} {
				positives, nackErr := judge(size, n, err)
				if (nackErr == nil && positives != size) || (nackErr != nil && positives == size && size > 0) {
					t.Fatalf("size %d n %d err %v: %d confirmed, nack error %v", size, n, err, positives, nackErr)
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
