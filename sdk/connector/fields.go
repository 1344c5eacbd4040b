package connector

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"time"
	"unicode/utf8"
)

// Fields are the named fields of a record's key or payload, whichever form
// it came in: structured data as it is, raw data parsed as a JSON object.
// Its methods give a field as a Go type, or an error that names the field
// and says what it holds and what was expected.
//
// A JSON number is held as a json.Number, so integers keep every digit;
// use the methods rather than type assertions, which would have to know
// the form the data came in.
type Fields map[string]any

// FieldsOf returns the fields of d: structured data, or raw data that holds
// a JSON object. No data (nil or empty raw data) has no fields. Raw data
// that is not a JSON object is an error that says so; raw data with a
// string (a name or a value, at any depth) that is not valid UTF-8 is an
// [*InvalidUTF8Error] naming the first such field, never a value with the
// bytes replaced. Structured data is returned as it is, strings included.
func FieldsOf(d Data) (Fields, error) {
	switch d := d.(type) {
	case nil:
		return Fields{}, nil
	case StructuredData:
		return Fields(d), nil
	case RawData:
		if len(bytes.TrimSpace(d)) == 0 {
			return Fields{}, nil
		}
		if !utf8.Valid(d) || loneSurrogate(d) {
			if err := invalidUTF8(d); err != nil {
				return nil, err
			}
		}
		dec := json.NewDecoder(bytes.NewReader(d))
		dec.UseNumber()
		var m map[string]any
		err := dec.Decode(&m)
		if err == nil && m == nil {
			err = errors.New("it is null")
		}
		if err == nil {
			if _, extra := dec.Token(); extra != io.EOF {
				err = errors.New("more follows the object")
			}
		}
		if err != nil {
			return nil, fmt.Errorf("sdk: the data is raw but not a JSON object (%s): %s", preview(d), err)
		}
		return Fields(m), nil
	}
	return nil, fmt.Errorf("sdk: data of type %T has no fields", d)
}

// preview quotes the start of b, for an error.
func preview(b []byte) string {
	const n = 40
	if len(b) > n {
		return strconv.Quote(string(b[:n])) + "…"
	}
	return strconv.Quote(string(b))
}

// FieldError says which field is missing or holds a value of the wrong
// type, and what was expected.
type FieldError struct {
	Name     string // the field
	Value    any    // what it holds; nil if it is missing or null
	Missing  bool   // the field is not there
	Expected string // e.g. "an integer"
}

func (e *FieldError) Error() string {
	switch {
	case e.Missing:
		return fmt.Sprintf("field %q: missing, expected %s", e.Name, e.Expected)
	case e.Value == nil:
		return fmt.Sprintf("field %q: got null, expected %s", e.Name, e.Expected)
	}
	got := fmt.Sprint(e.Value)
	switch v := e.Value.(type) {
	case string:
		got = strconv.Quote(v)
	case []byte:
		got = strconv.Quote(string(v))
	}
	return fmt.Sprintf("field %q: got %s (%s), expected %s", e.Name, got, kindOf(e.Value), e.Expected)
}

// kindOf names a field value's kind in JSON's terms.
func kindOf(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case []byte:
		return "bytes"
	case bool:
		return "a boolean"
	case json.Number, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
		return "a number"
	case map[string]any, StructuredData:
		return "an object"
	case []any:
		return "an array"
	}
	return fmt.Sprintf("a %T", v)
}

func (f Fields) get(name, expected string) (any, error) {
	v, ok := f[name]
	if !ok {
		return nil, &FieldError{Name: name, Missing: true, Expected: expected}
	}
	if v == nil {
		return nil, &FieldError{Name: name, Expected: expected}
	}
	return v, nil
}

// String returns the string field name; bytes are taken as text.
func (f Fields) String(name string) (string, error) {
	v, err := f.get(name, "a string")
	switch v := v.(type) {
	case string:
		return v, nil
	case []byte:
		return string(v), nil
	}
	return "", wrongType(err, name, v, "a string")
}

// Int returns the integer field name: any Go integer that fits in an int64,
// or a number without a fractional part.
func (f Fields) Int(name string) (int64, error) {
	v, err := f.get(name, "an integer")
	switch v := v.(type) {
	case int, int8, int16, int32, int64:
		return reflect.ValueOf(v).Int(), nil
	case uint, uint8, uint16, uint32, uint64:
		if u := reflect.ValueOf(v).Uint(); u <= math.MaxInt64 {
			return int64(u), nil
		}
	case json.Number:
		if n, err := v.Int64(); err == nil {
			return n, nil
		}
		if x, err := v.Float64(); err == nil && x == math.Trunc(x) && math.Abs(x) < 1<<63 {
			return int64(x), nil // 1e3, 10.0
		}
	case float32:
		if x := float64(v); x == math.Trunc(x) && math.Abs(x) < 1<<63 {
			return int64(x), nil
		}
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1<<63 {
			return int64(v), nil
		}
	}
	return 0, wrongType(err, name, v, "an integer")
}

// Float returns the numeric field name.
func (f Fields) Float(name string) (float64, error) {
	v, err := f.get(name, "a number")
	switch v := v.(type) {
	case json.Number:
		if x, err := v.Float64(); err == nil {
			return x, nil
		}
	case float64:
		return v, nil
	case float32:
		return float64(v), nil
	default:
		if n, err := f.Int(name); err == nil {
			return float64(n), nil
		}
	}
	return 0, wrongType(err, name, v, "a number")
}

// Bool returns the boolean field name.
func (f Fields) Bool(name string) (bool, error) {
	v, err := f.get(name, "true or false")
	if b, ok := v.(bool); ok {
		return b, nil
	}
	return false, wrongType(err, name, v, "true or false")
}

// Time returns the time field name: a time.Time, or a string in RFC 3339
// format, which is how JSON carries times.
func (f Fields) Time(name string) (time.Time, error) {
	const expected = `a time such as "2006-01-02T15:04:05Z"`
	v, err := f.get(name, expected)
	switch v := v.(type) {
	case time.Time:
		return v, nil
	case string:
		if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
			return t, nil
		}
	}
	return time.Time{}, wrongType(err, name, v, expected)
}

// Fields returns the object field name as Fields, for nested data.
func (f Fields) Fields(name string) (Fields, error) {
	v, err := f.get(name, "an object")
	switch v := v.(type) {
	case map[string]any:
		return Fields(v), nil
	case StructuredData:
		return Fields(v), nil
	case Fields:
		return v, nil
	}
	return nil, wrongType(err, name, v, "an object")
}

// wrongType returns err, the error of a missing or null field, or else
// the error of a value of the wrong type.
func wrongType(err error, name string, v any, expected string) error {
	if err != nil {
		return err
	}
	return &FieldError{Name: name, Value: v, Expected: expected}
}
