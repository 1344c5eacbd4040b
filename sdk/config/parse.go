package config

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"
)

// Parse fills targets, pointers to config structs, from the raw
// configuration Conduit sends: a flat map of parameter names to strings.
// Every key must name a parameter of one of them, and no two may declare
// the same parameter. A parameter that raw leaves out or empty takes its
// default; without one, its field keeps the value it has. Everything
// wrong is reported at once (see the package doc).
func Parse(raw map[string]string, targets ...any) error {
	structs := make([]reflect.Value, len(targets))
	params := make([][]Parameter, len(targets))
	var all []Parameter
	for i, target := range targets {
		v := reflect.ValueOf(target)
		if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
			return fmt.Errorf("config: Parse needs non-nil pointers to structs, got %T", target)
		}
		var err error
		if params[i], err = Parameters(target); err != nil {
			return err
		}
		structs[i] = v.Elem()
		all = append(all, params[i]...)
	}
	if err := unique(all); err != nil {
		return err
	}
	errs := unknownKeys(raw, all)
	for i, v := range structs {
		errs = append(errs, validate(v, fill(raw, params[i], v))...)
	}
	return joinProblems(errs...)
}

// Validator is implemented by a config struct that checks what its tags
// cannot express, such as a parameter that is required only when another
// has some value. The package doc says when Validate runs.
type Validator interface {
	// Validate reports what is wrong with the configuration, preferably
	// as a [*ParameterError] for each parameter at fault, joined with
	// errors.Join: Parse reports each as a problem of its own.
	Validate() error
}

// validate calls the Validate method of the config struct target, if it
// has one, and adds what it reports to errs, the errors of parsing target:
// a parameter that failed to parse holds its default, and what Validate
// says about a parameter that errs already names is left out, as the
// parse error is the more precise.
func validate(target reflect.Value, errs []error) []error {
	v, ok := target.Addr().Interface().(Validator)
	if !ok {
		return errs
	}
	err := v.Validate()
	if err == nil {
		return errs
	}
	failed := map[string]bool{}
	for _, e := range errs {
		if pe, ok := errors.AsType[*ParameterError](e); ok {
			failed[pe.Name] = true
		}
	}
	for _, e := range problems(nil).add(err) {
		if pe, ok := errors.AsType[*ParameterError](e); ok && failed[pe.Name] {
			continue
		}
		errs = append(errs, e)
	}
	return errs
}

// unknownKeys reports every key in raw that names none of params.
func unknownKeys(raw map[string]string, params []Parameter) []error {
	var errs []error
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !slices.ContainsFunc(params, func(p Parameter) bool { return p.matches(strings.TrimSpace(k)) }) {
			errs = append(errs, unknown(k, params))
		}
	}
	return errs
}

// fill sets target's fields from raw, applying defaults and validations.
// Keys that name none of params are left to unknownKeys.
func fill(raw map[string]string, params []Parameter, target reflect.Value) []error {
	var errs []error
	groups := map[string][]*Parameter{}
	for i := range params {
		p := &params[i]
		if p.group != nil {
			key := fmt.Sprint(p.group)
			groups[key] = append(groups[key], p)
			continue
		}
		field := target.FieldByIndex(p.field)
		if p.wildcard() {
			errs = append(errs, decodeWildcard(raw, p, field)...)
			continue
		}
		value := lookup(raw, p.Name)
		if value == "" {
			value = p.Default
		}
		if value == "" {
			if p.Required {
				errs = append(errs, &ParameterError{Name: p.Name, Expected: "is required but missing"})
			}
			continue
		}
		if err := set(p, field, value); err != nil {
			errs = append(errs, err)
			if value != p.Default && p.Default != "" {
				_ = set(p, field, p.Default) // for Validate, which runs anyway
			}
		}
	}
	for _, group := range groups {
		errs = append(errs, fillGroup(raw, group, target.FieldByIndex(group[0].group))...)
	}
	return errs
}

// fillGroup fills a map of structs: one element for every name that a key
// gives for the map's "*", each filled from the keys under its prefix.
func fillGroup(raw map[string]string, params []*Parameter, field reflect.Value) []error {
	prefix := params[0].Name[:strings.Index(params[0].Name, "*")] // "collections."

	subs := map[string]map[string]string{}
	for k, v := range raw {
		k = strings.TrimSpace(k)
		for _, p := range params {
			if p.matches(k) {
				name, rest, _ := strings.Cut(strings.TrimPrefix(k, prefix), ".")
				if subs[name] == nil {
					subs[name] = map[string]string{}
				}
				subs[name][rest] = v
				break
			}
		}
	}
	inner := make([]Parameter, len(params))
	for i, p := range params {
		inner[i] = *p.inner
	}
	var errs []error
	m := reflect.MakeMap(field.Type())
	for name, sub := range subs {
		elem := reflect.New(field.Type().Elem()).Elem()
		for _, err := range fill(sub, inner, elem) {
			if pe, ok := err.(*ParameterError); ok {
				pe.Name = prefix + name + "." + pe.Name
			}
			errs = append(errs, err)
		}
		m.SetMapIndex(reflect.ValueOf(name), elem)
	}
	field.Set(m)
	return errs
}

// lookup finds name in raw, tolerating surrounding spaces in keys and values.
func lookup(raw map[string]string, name string) string {
	if v, ok := raw[name]; ok {
		return strings.TrimSpace(v)
	}
	for k, v := range raw {
		if strings.TrimSpace(k) == name {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func decodeWildcard(raw map[string]string, p *Parameter, field reflect.Value) []error {
	var errs []error
	m := reflect.MakeMap(field.Type())
	prefix := strings.TrimSuffix(p.Name, "*")
	for k, v := range raw {
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !p.matches(k) {
			continue
		}
		if _, err := p.check(v); err != nil {
			err.(*ParameterError).Name = k
			errs = append(errs, err)
			continue
		}
		m.SetMapIndex(reflect.ValueOf(strings.TrimPrefix(k, prefix)), reflect.ValueOf(v))
	}
	if p.Required && m.Len() == 0 {
		errs = append(errs, &ParameterError{Name: p.Name, Expected: "needs at least one value"})
	}
	field.Set(m)
	return errs
}

func set(p *Parameter, field reflect.Value, value string) error {
	v, err := p.check(value)
	if err != nil {
		return err
	}
	switch field.Kind() {
	case reflect.Slice:
		var list []string
		for item := range strings.SplitSeq(value, ",") {
			if item = strings.TrimSpace(item); item != "" {
				list = append(list, item)
			}
		}
		field.Set(reflect.ValueOf(list))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		var n int64
		switch v := v.(type) {
		case int64:
			n = v
		case time.Duration:
			n = int64(v)
		}
		if field.OverflowInt(n) { // checked by p.check; kept for safety
			return &ParameterError{Name: p.Name, Value: value, Expected: "an integer that fits in " + field.Type().String()}
		}
		field.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n := v.(int64)
		if n < 0 || field.OverflowUint(uint64(n)) {
			return &ParameterError{Name: p.Name, Value: value, Expected: "an integer that fits in " + field.Type().String()}
		}
		field.SetUint(uint64(n))
	case reflect.Float32, reflect.Float64:
		f := v.(float64)
		if field.OverflowFloat(f) {
			return &ParameterError{Name: p.Name, Value: value, Expected: fmt.Sprintf("a number between %g and %g", -math.MaxFloat32, math.MaxFloat32)}
		}
		field.SetFloat(f)
	case reflect.Bool:
		field.SetBool(v.(bool))
	case reflect.String:
		field.SetString(value)
	}
	return nil
}

// unknown builds the error for a parameter nobody declared, suggesting the
// closest declared name.
func unknown(key string, params []Parameter) error {
	best, bestDist := "", len(key)/2+2
	for _, p := range params {
		name := p.Name
		if p.wildcard() {
			name = strings.TrimSuffix(name, "*") + "<name>"
		}
		if d := distance(strings.ToLower(key), strings.ToLower(name)); d < bestDist {
			best, bestDist = name, d
		}
	}
	e := &ParameterError{Name: key, Expected: "is not a known parameter"}
	if best != "" {
		e.Expected += fmt.Sprintf(" (did you mean %q?)", best)
	}
	return e
}

// distance is the Levenshtein edit distance between a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
