package config

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ParameterType is the type of a parameter's value as Conduit shows it.
type ParameterType string

// The parameter types a config struct field can have.
const (
	TypeString   ParameterType = "string"
	TypeInt      ParameterType = "int"
	TypeFloat    ParameterType = "float"
	TypeBool     ParameterType = "bool"
	TypeDuration ParameterType = "duration"
	// TypeStringList is a []string field's, written comma-separated.
	// Conduit's parameter types have no list, so on the wire it is a
	// string, as in the incumbent SDK.
	TypeStringList ParameterType = "[]string"
)

// Parameter describes one configuration parameter of a connector. Parameters
// are derived from a config struct's field tags (see the package doc); a name
// ending in ".*" stands for any name with that prefix.
type Parameter struct {
	Name        string        `json:"name"`
	Type        ParameterType `json:"type"`
	Default     string        `json:"default,omitempty"`
	Description string        `json:"description"`
	Required    bool          `json:"required,omitempty"`
	// GreaterThan and LessThan bound a numeric value, exclusively.
	GreaterThan *float64 `json:"greaterThan,omitempty"`
	LessThan    *float64 `json:"lessThan,omitempty"`
	// OneOf lists the allowed values, NoneOf the forbidden ones.
	OneOf  []string `json:"oneOf,omitempty"`
	NoneOf []string `json:"noneOf,omitempty"`
	// Pattern is a regular expression the whole value must match.
	Pattern string `json:"pattern,omitempty"`

	pattern *regexp.Regexp
	kind    reflect.Kind // the Go kind of the field, which bounds an integer
	field   []int        // index path of the field in the config struct

	// A parameter inside a map of structs ("collections.*.format.type")
	// belongs to the map field at group; inner is its parameter within the
	// struct, whose field path is relative to the map's element.
	group []int
	inner *Parameter
}

// wildcard reports whether the parameter stands for a family of names.
func (p *Parameter) wildcard() bool { return strings.HasSuffix(p.Name, ".*") }

// matches reports whether key names this parameter: a "*" segment in the
// middle of the name matches one segment of key, a final one the rest.
func (p *Parameter) matches(key string) bool {
	if !strings.Contains(p.Name, "*") {
		return key == p.Name
	}
	pattern, rest := p.Name, key
	for {
		seg, more, found := strings.Cut(pattern, ".")
		if seg == "*" && !found {
			return rest != "" // a final * takes the rest
		}
		var part string
		part, rest, _ = strings.Cut(rest, ".")
		if part == "" || (seg != "*" && seg != part) {
			return false
		}
		if !found {
			return rest == "" && !strings.HasSuffix(key, ".")
		}
		pattern = more
	}
}

// check validates a non-empty raw value and returns it converted to the
// parameter's type.
func (p *Parameter) check(value string) (any, error) {
	v, expected := p.parse(value)
	if expected != "" {
		return nil, &ParameterError{Name: p.Name, Value: value, Expected: expected}
	}
	if len(p.OneOf) > 0 && !slices.Contains(p.OneOf, value) {
		return nil, &ParameterError{Name: p.Name, Value: value, Expected: "one of " + strings.Join(p.OneOf, ", ")}
	}
	if slices.Contains(p.NoneOf, value) {
		return nil, &ParameterError{Name: p.Name, Value: value, Expected: "none of " + strings.Join(p.NoneOf, ", ")}
	}
	if p.pattern != nil && !p.pattern.MatchString(value) {
		return nil, &ParameterError{Name: p.Name, Value: value, Expected: "a value matching " + p.Pattern}
	}
	return v, nil
}

// parse converts value to the parameter's Go representation and checks its
// bounds; expected is non-empty when the value does not fit and says, in
// words a person reads without translating, what would.
func (p *Parameter) parse(value string) (v any, expected string) {
	switch p.Type {
	case TypeInt:
		return p.parseInt(value)
	case TypeFloat:
		f, err := strconv.ParseFloat(value, 64)
		switch {
		case err != nil && !errors.Is(err, strconv.ErrRange):
			return nil, "a number"
		case err != nil || math.IsNaN(f) || math.IsInf(f, 0):
			return nil, "a finite number"
		}
		if (p.GreaterThan != nil && !(f > *p.GreaterThan)) || (p.LessThan != nil && !(f < *p.LessThan)) {
			return nil, bounds(p.GreaterThan, p.LessThan, formatFloat, "greater than ", "less than ")
		}
		return f, ""
	case TypeBool:
		b, err := strconv.ParseBool(value)
		if err != nil {
			return nil, "true or false"
		}
		return b, ""
	case TypeDuration:
		d, err := time.ParseDuration(value)
		if err != nil {
			return nil, `a duration such as "1s" or "250ms"`
		}
		if (p.GreaterThan != nil && !(float64(d) > *p.GreaterThan)) || (p.LessThan != nil && !(float64(d) < *p.LessThan)) {
			return nil, p.durationBounds()
		}
		return d, ""
	default:
		return value, ""
	}
}

// parseInt parses an integer parameter: within its gt and lt bounds, which
// are exclusive, and within the range of its field's type.
func (p *Parameter) parseInt(value string) (any, string) {
	lo, hi := p.intRange()
	n, err := strconv.ParseInt(value, 10, 64)
	switch {
	case errors.Is(err, strconv.ErrRange), err == nil && (n < lo || n > hi):
		below := strings.HasPrefix(value, "-")
		if err == nil {
			below = n < lo
		}
		// Name one end if only that end is a limit a person would state;
		// both when both are.
		hiLimited := p.LessThan != nil || hi < math.MaxInt64
		loLimited := p.GreaterThan != nil || lo > math.MinInt64
		switch {
		case below && !hiLimited:
			return nil, fmt.Sprintf("at least %d", lo)
		case !below && !loLimited:
			return nil, fmt.Sprintf("at most %d", hi)
		}
		return nil, fmt.Sprintf("between %d and %d", lo, hi)
	case err != nil:
		return nil, "an integer"
	}
	return n, ""
}

// intRange returns the smallest and largest values an integer parameter
// accepts, both inclusive: its bounds, within its field type's range.
func (p *Parameter) intRange() (lo, hi int64) {
	lo, hi = math.MinInt64, math.MaxInt64
	switch p.kind {
	case reflect.Int8:
		lo, hi = math.MinInt8, math.MaxInt8
	case reflect.Int16:
		lo, hi = math.MinInt16, math.MaxInt16
	case reflect.Int32:
		lo, hi = math.MinInt32, math.MaxInt32
	case reflect.Uint8:
		lo, hi = 0, math.MaxUint8
	case reflect.Uint16:
		lo, hi = 0, math.MaxUint16
	case reflect.Uint32:
		lo, hi = 0, math.MaxUint32
	case reflect.Uint, reflect.Uint64, reflect.Uintptr:
		lo = 0
	}
	if p.GreaterThan != nil {
		if g := math.Floor(*p.GreaterThan) + 1; g > float64(lo) {
			lo = clampInt(g)
		}
	}
	if p.LessThan != nil {
		if l := math.Ceil(*p.LessThan) - 1; l < float64(hi) {
			hi = clampInt(l)
		}
	}
	return lo, hi
}

func clampInt(f float64) int64 {
	switch {
	case f <= math.MinInt64:
		return math.MinInt64
	case f >= math.MaxInt64:
		return math.MaxInt64
	}
	return int64(f)
}

// durationBounds says what a duration parameter's bounds allow: gt=-1
// (nanoseconds) means "at least 0s", which is how a person puts it.
func (p *Parameter) durationBounds() string {
	if g := p.GreaterThan; g != nil && *g == -1 && p.LessThan == nil {
		return "at least 0s"
	}
	return bounds(p.GreaterThan, p.LessThan, func(f float64) string { return time.Duration(f).String() }, "longer than ", "shorter than ")
}

// bounds says what exclusive bounds allow, each formatted by format.
func bounds(gt, lt *float64, format func(float64) string, above, below string) string {
	var parts []string
	if gt != nil {
		parts = append(parts, above+format(*gt))
	}
	if lt != nil {
		parts = append(parts, below+format(*lt))
	}
	return strings.Join(parts, " and ")
}

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// ParameterError says which parameter has a bad value and what was expected.
type ParameterError struct {
	Name     string // the parameter as the user wrote it
	Value    string // the value given, if any
	Expected string // what would have been accepted
}

func (e *ParameterError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("parameter %q: %s", e.Name, e.Expected)
	}
	return fmt.Sprintf("parameter %q: got %q, expected %s", e.Name, e.Value, e.Expected)
}

var durationType = reflect.TypeFor[time.Duration]()

// typeOf maps a config field's Go type to a parameter type.
func typeOf(t reflect.Type) (ParameterType, bool) {
	if t == durationType {
		return TypeDuration, true
	}
	switch t.Kind() {
	case reflect.String:
		return TypeString, true
	case reflect.Bool:
		return TypeBool, true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return TypeInt, true
	case reflect.Float32, reflect.Float64:
		return TypeFloat, true
	case reflect.Slice:
		// A list is written as comma-separated strings.
		return TypeStringList, t.Elem().Kind() == reflect.String
	case reflect.Map:
		// A map holds the values of a wildcard parameter.
		return TypeString, t.Key().Kind() == reflect.String && t.Elem().Kind() == reflect.String
	}
	return "", false
}
