package connector

import (
	"errors"
	"fmt"
	"testing"

	"github.com/matryer/is"
)

func TestOutcomeMarks(t *testing.T) {
	is := is.New(t)
	base := errors.New("duplicate key")
	f := RecordFault(base)
	is.Equal(f.Error(), "duplicate key") // the connector's text, unchanged
	is.True(errors.Is(f, base))
	is.True(IsRecordFault(f) && !IsRetryable(f))
	is.True(IsRecordFault(fmt.Errorf("row 3: %w", f))) // found through wrapping

	r := Retryable(base)
	is.Equal(r.Error(), "duplicate key")
	is.True(errors.Is(r, base))
	is.True(IsRetryable(r) && !IsRecordFault(r))

	is.True(IsRecordFault(Retryable(RecordFault(base)))) // a record fault wins
	is.True(!IsRetryable(Retryable(RecordFault(base))))
	is.True(!IsRecordFault(base) && !IsRetryable(base))
	is.Equal(RecordFault(nil), nil)
	is.Equal(Retryable(nil), nil)
}
