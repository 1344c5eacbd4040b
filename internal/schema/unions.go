package schema

import (
	"reflect"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/hamba/avro/v2"
)

// hamba/avro decodes a union into its plain value only when it can name a
// Go type for every branch; otherwise it decodes every value of that union
// as a one-entry map from the branch's name to the value. The branches it
// can name, with the configuration Decode uses, are these.
var plainBranches = map[string]bool{
	"null": true, "boolean": true, "int": true, "long": true, "float": true,
	"double": true, "string": true, "bytes": true,
	"int.date": true, "int.time-millis": true, "long.timestamp-millis": true,
	"long.timestamp-micros": true, "long.time-micros": true,
	"bytes.decimal": true, "string.uuid": true,
}

// branchName is the name hamba/avro gives a union branch.
func branchName(s avro.Schema) string {
	if r, ok := s.(*avro.RefSchema); ok {
		s = r.Schema()
	}
	if n, ok := s.(avro.NamedSchema); ok {
		return n.FullName()
	}
	name := string(s.Type())
	if p, ok := s.(*avro.PrimitiveSchema); ok && p.Logical() != nil {
		name += "." + string(p.Logical().Type())
	}
	return name
}

// wrapsValues reports whether values of union u decode wrapped in a map.
func wrapsValues(u *avro.UnionSchema) bool {
	for _, t := range u.Types() {
		if !plainBranches[branchName(t)] {
			return true
		}
	}
	return false
}

// hasWrappedUnion reports whether any union under s decodes wrapped.
func hasWrappedUnion(s avro.Schema, seen map[string]bool) bool {
	switch s := s.(type) {
	case *avro.RefSchema:
		return hasWrappedUnion(s.Schema(), seen)
	case *avro.RecordSchema:
		if seen[s.FullName()] {
			return false
		}
		seen[s.FullName()] = true
		for _, f := range s.Fields() {
			if hasWrappedUnion(f.Type(), seen) {
				return true
			}
		}
	case *avro.MapSchema:
		return hasWrappedUnion(s.Values(), seen)
	case *avro.ArraySchema:
		return hasWrappedUnion(s.Items(), seen)
	case *avro.UnionSchema:
		if wrapsValues(s) {
			return true
		}
		for _, t := range s.Types() {
			if hasWrappedUnion(t, seen) {
				return true
			}
		}
	}
	return false
}

// unwrapUnions returns v, decoded with s, with every wrapped union value
// replaced by the value itself. It rewrites maps and slices in place.
func unwrapUnions(s avro.Schema, v any) any {
	switch s := s.(type) {
	case *avro.RefSchema:
		return unwrapUnions(s.Schema(), v)
	case *avro.RecordSchema:
		m := asMap(v)
		for _, f := range s.Fields() {
			if fv, ok := m[f.Name()]; ok {
				m[f.Name()] = unwrapUnions(f.Type(), fv)
			}
		}
	case *avro.MapSchema:
		m := asMap(v)
		for k, e := range m {
			m[k] = unwrapUnions(s.Values(), e)
		}
	case *avro.ArraySchema:
		a, _ := v.([]any)
		for i, e := range a {
			a[i] = unwrapUnions(s.Items(), e)
		}
	case *avro.UnionSchema:
		if !wrapsValues(s) {
			return v // plain already, and only primitives: nothing beneath
		}
		m, ok := v.(map[string]any)
		if !ok || len(m) != 1 {
			return v
		}
		for name, inner := range m {
			for _, t := range s.Types() {
				if branchName(t) == name {
					return unwrapUnions(t, inner)
				}
			}
		}
	}
	return v
}

func asMap(v any) map[string]any {
	switch v := v.(type) {
	case map[string]any:
		return v
	case opencdc.StructuredData:
		return v
	}
	return nil
}

// wrapUnions is the inverse of unwrapUnions: it returns v, to be encoded
// with s, with each value of a union that decodes wrapped put in the
// one-entry map hamba/avro encodes such unions from, when the value's Go
// type does not name its branch by itself. It copies the maps and slices it
// changes and leaves v alone.
func wrapUnions(s avro.Schema, v any) any {
	switch s := s.(type) {
	case *avro.RefSchema:
		return wrapUnions(s.Schema(), v)
	case *avro.RecordSchema:
		m := asMap(v)
		if m == nil {
			return v
		}
		out := make(map[string]any, len(m))
		for k, e := range m {
			out[k] = e
		}
		for _, f := range s.Fields() {
			if fv, ok := m[f.Name()]; ok {
				out[f.Name()] = wrapUnions(f.Type(), fv)
			}
		}
		return out
	case *avro.MapSchema:
		m := asMap(v)
		if m == nil {
			return v
		}
		out := make(map[string]any, len(m))
		for k, e := range m {
			out[k] = wrapUnions(s.Values(), e)
		}
		return out
	case *avro.ArraySchema:
		a, ok := v.([]any)
		if !ok {
			return v
		}
		out := make([]any, len(a))
		for i, e := range a {
			out[i] = wrapUnions(s.Items(), e)
		}
		return out
	case *avro.UnionSchema:
		if v == nil || !wrapsValues(s) {
			return v
		}
		if t := branchFor(s, v); t != nil {
			return map[string]any{branchName(t): wrapUnions(t, v)}
		}
	}
	return v
}

// branchFor returns the branch of u a value needs wrapping for, or nil when
// the value's Go type names its branch (or none fits, for the encoder to
// report).
func branchFor(u *avro.UnionSchema, v any) avro.Schema {
	var want []avro.Type
	switch v.(type) {
	case map[string]any, opencdc.StructuredData:
		want = []avro.Type{avro.Record, avro.Map}
	case []any:
		want = []avro.Type{avro.Array}
	case string:
		for _, t := range u.Types() {
			if t.Type() == avro.String {
				return nil
			}
		}
		want = []avro.Type{avro.Enum}
	default:
		if reflectArrayOfBytes(v) {
			want = []avro.Type{avro.Fixed}
		}
	}
	for _, w := range want {
		for _, t := range u.Types() {
			if r, ok := t.(*avro.RefSchema); ok {
				t = r.Schema()
			}
			if t.Type() == w {
				return t
			}
		}
	}
	return nil
}

func reflectArrayOfBytes(v any) bool {
	t := reflect.TypeOf(v)
	return t != nil && t.Kind() == reflect.Array && t.Elem().Kind() == reflect.Uint8
}
