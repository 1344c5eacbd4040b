package plugin

import (
	"fmt"
	"runtime/debug"

	"github.com/connkit/connkit/internal/panics"
)

// PanicError is a panic in connector code, turned into an error on the call
// that panicked so that the plugin process keeps serving.
type PanicError struct {
	Call  string   // the connector method, e.g. "Write"
	Value any      // what was passed to panic
	Where []string // the connector's frames, innermost first: "function (file:line)"
	Stack []byte
}

// Error says what panicked, with what, and where: the connector's
// innermost frames.
func (e *PanicError) Error() string {
	return fmt.Sprintf("connector panicked in %s: %v%s", e.Call, e.Value, panics.At(e.Where))
}

// guard runs f and converts a panic into a *PanicError, including one in
// the Error method of the error f returns (a typed nil pointer, typically),
// which would otherwise crash the process wherever the error is printed.
func guard(call string, f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Call: call, Value: r, Where: panics.Where(), Stack: debug.Stack()}
		}
	}()
	if err = f(); err != nil {
		_ = err.Error()
	}
	return err
}
