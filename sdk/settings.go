package sdk

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/connkit/connkit/middleware"
)

// group is one group of the SDK's sdk.* parameters: those a settings
// struct declares, with a connector's values as their defaults, and how a
// pipeline's configuration becomes what the group configures (a policy
// the plugin server runs, or a wrapper of the connector's calls).
type group struct {
	params []Parameter
	err    error // a malformed settings struct or default
	// apply parses the group's parameters from raw, over the defaults,
	// and stores what they configure; it returns what is wrong with them.
	apply func(raw map[string]string, env middleware.Env) []error
}

// newGroup returns the group of settings struct S, with defaults as the
// defaults, whose parsed settings build stores in *into.
func newGroup[S, W any](defaults S, build func(S, middleware.Env) (W, error), into *W) group {
	params, err := settingsParameters(defaults)
	if err != nil {
		return group{err: err}
	}
	return group{params: params, apply: func(raw map[string]string, env middleware.Env) []error {
		s := defaults
		target := reflect.ValueOf(&s).Elem()
		if errs := validate(target, fill(raw, params, target, keepDefaults)); len(errs) > 0 {
			return errs
		}
		w, err := build(s, env)
		if err != nil {
			return []error{err}
		}
		*into = w
		return nil
	}}
}

// or returns *p, or def when p is nil.
func or[T any](p *T, def T) T {
	if p != nil {
		return *p
	}
	return def
}

// settingsParameters returns the parameters a settings struct declares,
// each with the value's own field as the default the specification shows:
// the settings an author gives are the defaults a pipeline can override.
func settingsParameters(settings any) ([]Parameter, error) {
	v := reflect.ValueOf(settings)
	if v.Kind() != reflect.Struct {
		return nil, fmt.Errorf("sdk: settings must be a struct value, got %T", settings)
	}
	params, err := Parameters(settings)
	if err != nil {
		return nil, err
	}
	for i := range params {
		p := &params[i]
		if p.group != nil || p.wildcard() {
			continue
		}
		def, ok := formatDefault(v.FieldByIndex(p.field))
		if !ok {
			continue
		}
		if def != "" {
			if _, err := p.check(def); err != nil {
				return nil, fmt.Errorf("sdk: %T: the value given is not a valid default: %w", settings, err)
			}
		}
		p.Default = def
	}
	return params, nil
}

// formatDefault writes a field's value the way a pipeline would write it.
func formatDefault(f reflect.Value) (string, bool) {
	if f.Type() == durationType {
		d := time.Duration(f.Int())
		if d == 0 {
			return "0", true
		}
		return d.String(), true
	}
	switch f.Kind() {
	case reflect.String:
		return f.String(), true
	case reflect.Bool:
		return strconv.FormatBool(f.Bool()), true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(f.Int(), 10), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(f.Uint(), 10), true
	case reflect.Float32, reflect.Float64:
		return strconv.FormatFloat(f.Float(), 'g', -1, 64), true
	case reflect.Slice:
		if f.Type().Elem().Kind() == reflect.String {
			return strings.Join(f.Interface().([]string), ","), true
		}
	}
	return "", false
}
