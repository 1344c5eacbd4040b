package sdk

import (
	"fmt"
	"reflect"
	"regexp"
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
)

// Parameter describes one configuration parameter of a connector. Parameters
// are derived from a config struct's field tags (see [ParseConfig]); a name
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
	field   []int // index path of the field in the config struct

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
	v, expected := parseValue(p.Type, value)
	if expected != "" {
		return nil, &ParameterError{Name: p.Name, Value: value, Expected: expected}
	}
	if n, ok := number(v); ok {
		if p.GreaterThan != nil && !(n > *p.GreaterThan) {
			return nil, &ParameterError{Name: p.Name, Value: value, Expected: "a value greater than " + formatFloat(*p.GreaterThan)}
		}
		if p.LessThan != nil && !(n < *p.LessThan) {
			return nil, &ParameterError{Name: p.Name, Value: value, Expected: "a value less than " + formatFloat(*p.LessThan)}
		}
	}
	if len(p.OneOf) > 0 && !contains(p.OneOf, value) {
		return nil, &ParameterError{Name: p.Name, Value: value, Expected: "one of " + strings.Join(p.OneOf, ", ")}
	}
	if contains(p.NoneOf, value) {
		return nil, &ParameterError{Name: p.Name, Value: value, Expected: "none of " + strings.Join(p.NoneOf, ", ")}
	}
	if p.pattern != nil && !p.pattern.MatchString(value) {
		return nil, &ParameterError{Name: p.Name, Value: value, Expected: "a value matching " + p.Pattern}
	}
	return v, nil
}

// parseValue converts value to t's Go representation; expected is non-empty
// when the value does not fit and says what would.
func parseValue(t ParameterType, value string) (v any, expected string) {
	switch t {
	case TypeInt:
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return nil, "an integer"
		}
		return n, ""
	case TypeFloat:
		f, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return nil, "a number"
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
		return d, ""
	default:
		return value, ""
	}
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case float64:
		return n, true
	case time.Duration:
		return float64(n), true
	}
	return 0, false
}

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

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
		return TypeString, t.Elem().Kind() == reflect.String
	case reflect.Map:
		// A map holds the values of a wildcard parameter.
		return TypeString, t.Key().Kind() == reflect.String && t.Elem().Kind() == reflect.String
	}
	return "", false
}
