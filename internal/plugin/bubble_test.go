package plugin

import (
	"testing"
	"testing/synctest"

	"github.com/connkit/connkit/internal/leakcheck"
	"github.com/matryer/is"
)

// inBubble runs body in a synctest bubble, where time is virtual and
// synctest.Wait settles the servers, with is bound to the bubble's t; it
// fails t if goroutines started meanwhile are still running when t ends.
func inBubble(t *testing.T, body func(t *testing.T, is *is.I)) {
	t.Helper()
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) { body(t, is.New(t)) })
}
