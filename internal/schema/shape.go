package schema

import (
	"reflect"
	"time"

	"github.com/conduitio/conduit-commons/opencdc"
)

// shape remembers the Go types of a flat record's fields and the schema
// registered for them, so that ForData can recognise the next record of
// the same shape without extracting its schema again.
type shape struct {
	types  map[string]reflect.Type
	schema Schema
	codec  *Codec
}

// flatShape returns the field types of d when each is a scalar whose Avro
// type Extract derives from the Go type alone (nil included), or nil.
func flatShape(d opencdc.StructuredData) map[string]reflect.Type {
	types := make(map[string]reflect.Type, len(d))
	for k, v := range d {
		t := reflect.TypeOf(v)
		if !scalar(t) {
			return nil
		}
		types[k] = t
	}
	return types
}

// matches reports whether d has exactly the fields and types of s.
func (s *shape) matches(d opencdc.StructuredData) bool {
	if len(d) != len(s.types) {
		return false
	}
	for k, v := range d {
		t, ok := s.types[k]
		if !ok || t != reflect.TypeOf(v) {
			return false
		}
	}
	return true
}

var (
	bytesType = reflect.TypeFor[[]byte]()
	timeType  = reflect.TypeFor[time.Time]()
)

func scalar(t reflect.Type) bool {
	if t == nil || t == bytesType || t == timeType {
		return true
	}
	switch t.Kind() { //nolint:exhaustive // the rest need Extract
	case reflect.Bool, reflect.String, reflect.Float32, reflect.Float64,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint8, reflect.Uint16, reflect.Uint32:
		return true
	}
	return false
}
