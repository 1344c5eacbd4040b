package sdktest

import (
	"context"
	"testing"
)

// tb is what the checks need from a test. *testing.T provides it through
// testingT; the kit's own tests provide a recorder, so that they can see
// which checks fail on a broken connector and what they say.
type tb interface {
	Helper()
	Name() string
	Logf(format string, args ...any)
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
	Failed() bool
	Cleanup(func())
	TempDir() string
	Context() context.Context
	Run(name string, f func(tb)) bool
}

type testingT struct{ *testing.T }

func (t testingT) Run(name string, f func(tb)) bool {
	return t.T.Run(name, func(t *testing.T) { f(testingT{t}) })
}
