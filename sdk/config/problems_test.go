package config

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// errTooLate is a problem a Validate method reports without a
// *ParameterError, for errors.Is to find.
var errTooLate = errors.New("too late")

// joinedConfig's Validate reports what its field validate says, so that
// each test row decides how the problems are joined.
type joinedConfig struct {
	Count    int `param:"count" validate:"gt=0"`
	validate func() error
}

func (c *joinedConfig) Validate() error { return c.validate() }

// TestProblemsReadOnOneLine checks the error of a configuration with
// several problems: Conduit logs it as one field of one line, where a
// newline shows as \n, so its problems are separated by "; ", however a
// Validate method joined them, and errors.Is and errors.As still find
// each.
func TestProblemsReadOnOneLine(t *testing.T) {
	min := &ParameterError{Name: "min", Value: "5", Expected: "less than max (5)"}
	countFailed := `parameter "count": got "-1", expected at least 1`
	for _, tt := range []struct {
		name     string
		validate func() error
		want     string
	}{{
		name:     "Validate joins with errors.Join",
		validate: func() error { return errors.Join(min, errTooLate) },
		want:     countFailed + `; parameter "min": got "5", expected less than max (5); too late`,
	}, {
		name:     "Validate joins joins",
		validate: func() error { return errors.Join(errors.Join(min), errors.Join(nil, errTooLate)) },
		want:     countFailed + `; parameter "min": got "5", expected less than max (5); too late`,
	}, {
		name:     "a problem that wraps several in words of its own stays one",
		validate: func() error { return fmt.Errorf("%w, and so %w", min, errTooLate) },
		want:     countFailed + `; parameter "min": got "5", expected less than max (5), and so too late`,
	}, {
		name:     "a problem that wraps a joined error keeps to the line",
		validate: func() error { return fmt.Errorf("range: %w", errors.Join(min, errTooLate)) },
		want:     countFailed + `; range: parameter "min": got "5", expected less than max (5); too late`,
	}} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			cfg := joinedConfig{validate: tt.validate}
			err := Parse(map[string]string{"count": "-1"}, &cfg)
			is.Equal(err.Error(), tt.want)
			is.True(!strings.Contains(err.Error(), "\n"))
			is.True(errors.Is(err, errTooLate)) // every problem is found
			var pe *ParameterError
			is.True(errors.As(err, &pe))
			is.Equal(pe.Name, "count") // the first problem, the tag's
			is.True(errors.Is(err, min))
		})
	}
}

// TestOneProblemIsItsMessage checks that the error of a configuration
// with one problem says just that problem.
func TestOneProblemIsItsMessage(t *testing.T) {
	is := is.New(t)
	cfg := joinedConfig{validate: func() error { return nil }}
	err := Parse(map[string]string{"count": "-1"}, &cfg)
	is.Equal(err.Error(), `parameter "count": got "-1", expected at least 1`)
	is.NoErr(Parse(map[string]string{"count": "1"}, &cfg))
}
