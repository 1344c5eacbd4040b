package format

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/conduitio/conduit-commons/opencdc"
)

// debeziumJSON writes a record as a Debezium change event in a Kafka
// Connect envelope: a schema inferred from the values, and the payload.
type debeziumJSON struct {
	schemaHead []byte // the envelope up to its schema's fields
	rawDataKey string
}

// The parts of the envelope's schema that do not depend on the record.
const (
	debeziumSchemaTail = `{"type":"string","field":"op"},` +
		`{"type":"int64","optional":true,"field":"ts_ms"},` +
		`{"type":"struct","optional":true,"fields":[` +
		`{"type":"string","field":"id"},` +
		`{"type":"int64","field":"total_order"},` +
		`{"type":"int64","field":"data_collection_order"}` +
		`],"field":"transaction"}]}`
)

func newDebeziumJSON(opts map[string]string) debeziumJSON {
	d := debeziumJSON{rawDataKey: opts[OptionDebeziumRawDataKey]}
	if d.rawDataKey == "" {
		d.rawDataKey = DefaultDebeziumRawDataKey
	}
	e := new(encoder)
	e.buf = append(e.buf, `{"schema":{"type":"struct",`...)
	if name := opts[OptionDebeziumSchemaName]; name != "" {
		e.buf = append(e.buf, `"name":`...)
		e.string(name)
		e.buf = append(e.buf, ',')
	}
	e.buf = append(e.buf, `"fields":[`...)
	d.schemaHead = e.buf
	return d
}

// debeziumOps maps operations to Debezium's op codes; others have "".
var debeziumOps = [...]string{
	opencdc.OperationCreate:   "c",
	opencdc.OperationUpdate:   "u",
	opencdc.OperationDelete:   "d",
	opencdc.OperationSnapshot: "r",
}

func (d debeziumJSON) Serialize(r opencdc.Record) ([]byte, error) {
	before, err := d.structured(r.Payload.Before)
	if err != nil {
		return nil, fmt.Errorf("%s: payload before: %w", DebeziumJSON, err)
	}
	after, err := d.structured(r.Payload.After)
	if err != nil {
		return nil, fmt.Errorf("%s: payload after: %w", DebeziumJSON, err)
	}
	e := getEncoder()
	if err := e.debezium(d.schemaHead, r, before, after); err != nil {
		e.release()
		return nil, fmt.Errorf("%s: %w", DebeziumJSON, err)
	}
	return e.bytes(), nil
}

func (e *encoder) debezium(head []byte, r opencdc.Record, before, after map[string]any) error {
	e.buf = append(e.buf, head...)
	// Before and after share a schema: a create has no before, a delete no
	// after, and the schema of the other stands in for the missing one.
	if before == nil {
		if err := e.structSchema(after, "before"); err != nil {
			return err
		}
	} else if err := e.structSchema(before, "before"); err != nil {
		return err
	}
	e.buf = append(e.buf, ',')
	if after == nil {
		if err := e.structSchema(before, "after"); err != nil {
			return err
		}
	} else if err := e.structSchema(after, "after"); err != nil {
		return err
	}
	e.buf = append(e.buf, `,{"type":"struct","optional":true`...)
	if len(r.Metadata) > 0 {
		e.buf = append(e.buf, `,"fields":[`...)
		base := len(e.keys)
		for k := range r.Metadata {
			e.keys = append(e.keys, k)
		}
		slices.Sort(e.keys[base:])
		for i, k := range e.keys[base:] {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			e.simpleSchema("string", false, k)
		}
		e.keys = e.keys[:base]
		e.buf = append(e.buf, ']')
	}
	e.buf = append(e.buf, `,"field":"source"},`...)
	e.buf = append(e.buf, debeziumSchemaTail...)

	e.buf = append(e.buf, `,"payload":{"before":`...)
	if err := e.object(before); err != nil {
		return fmt.Errorf("payload before: %w", err)
	}
	e.buf = append(e.buf, `,"after":`...)
	if err := e.object(after); err != nil {
		return fmt.Errorf("payload after: %w", err)
	}
	e.buf = append(e.buf, `,"source":`...)
	e.stringMap(r.Metadata)
	e.buf = append(e.buf, `,"op":"`...)
	if int(r.Operation) >= 0 && int(r.Operation) < len(debeziumOps) {
		e.buf = append(e.buf, debeziumOps[r.Operation]...)
	}
	e.buf = append(e.buf, '"')
	// A missing or malformed opencdc.readAt leaves ts_ms out.
	if t, err := r.Metadata.GetReadAt(); err == nil && t.UnixMilli() != 0 {
		e.buf = append(e.buf, `,"ts_ms":`...)
		e.buf = strconv.AppendInt(e.buf, t.UnixMilli(), 10)
	}
	e.buf = append(e.buf, `,"transaction":null}}`...)
	return nil
}

// structured returns data as a map: raw data holding a JSON object in
// valid UTF-8 is parsed, other raw data goes under the raw data key, empty
// raw data is nil.
func (d debeziumJSON) structured(data opencdc.Data) (map[string]any, error) {
	switch data := data.(type) {
	case nil:
		return nil, nil
	case opencdc.StructuredData:
		return data, nil
	case opencdc.RawData:
		if len(data) == 0 {
			return nil, nil
		}
		// Parsing text that is not valid UTF-8 would replace its invalid
		// bytes with U+FFFD: such data goes as bytes, unchanged.
		var m map[string]any
		if !utf8.Valid(data) || json.Unmarshal(data, &m) != nil {
			return map[string]any{d.rawDataKey: []byte(data)}, nil
		}
		return m, nil
	}
	return nil, fmt.Errorf("unknown data type %T", data)
}

// simpleSchema appends the schema of a type without parts.
func (e *encoder) simpleSchema(typ string, optional bool, field string) {
	e.buf = append(e.buf, `{"type":"`...)
	e.buf = append(e.buf, typ...)
	e.buf = append(e.buf, '"')
	if optional {
		e.buf = append(e.buf, `,"optional":true`...)
	}
	e.field(field)
}

// field ends a schema with its field name, if it has one.
func (e *encoder) field(name string) {
	if name != "" {
		e.buf = append(e.buf, `,"field":`...)
		e.string(name)
	}
	e.buf = append(e.buf, '}')
}

// structSchema appends the schema of a map: an optional struct with a
// field per key, sorted.
func (e *encoder) structSchema(m map[string]any, field string) error {
	e.buf = append(e.buf, `{"type":"struct","optional":true`...)
	if len(m) > 0 {
		e.buf = append(e.buf, `,"fields":[`...)
		base := len(e.keys)
		for k := range m {
			e.keys = append(e.keys, k)
		}
		slices.Sort(e.keys[base:])
		for i := base; i < len(e.keys); i++ {
			if i > base {
				e.buf = append(e.buf, ',')
			}
			if err := e.valueSchema(m[e.keys[i]], e.keys[i]); err != nil {
				e.keys = e.keys[:base]
				return err
			}
		}
		e.keys = e.keys[:base]
		e.buf = append(e.buf, ']')
	}
	e.field(field)
	return nil
}

// valueSchema appends the schema of a value in a map or a list. Types
// that JSON and the common connectors use are handled here; others by
// reflection (see schemaOf).
func (e *encoder) valueSchema(v any, field string) error {
	switch v := v.(type) {
	case nil:
		e.simpleSchema("string", true, field) // nothing to infer from
	case string:
		e.simpleSchema("string", false, field)
	case bool:
		e.simpleSchema("boolean", false, field)
	case int, int64, uint, uint64, uint32:
		e.simpleSchema("int64", false, field)
	case int32, uint16:
		e.simpleSchema("int32", false, field)
	case int16, uint8:
		e.simpleSchema("int16", false, field)
	case int8:
		e.simpleSchema("int8", false, field)
	case float64:
		e.simpleSchema("double", false, field)
	case float32:
		e.simpleSchema("float", false, field)
	case []byte:
		e.simpleSchema("bytes", true, field)
	case map[string]any:
		return e.structSchema(v, field)
	case opencdc.StructuredData:
		return e.structSchema(v, field)
	case []any:
		e.buf = append(e.buf, `{"type":"array","optional":true,"items":`...)
		var first any
		if len(v) > 0 {
			first = v[0]
		}
		if err := e.valueSchema(first, ""); err != nil {
			return err
		}
		e.field(field)
	default:
		s, err := schemaOf(reflect.ValueOf(v), reflect.TypeOf(v), 0)
		if err != nil {
			return err
		}
		if s == nil {
			s = &schema{typ: "string", optional: true}
		}
		s.field = field
		e.schema(s)
	}
	return nil
}

// schema is a Kafka Connect schema, for the values valueSchema leaves to
// reflection.
type schema struct {
	typ                 string
	optional            bool
	items, keys, values *schema
	fields              []*schema
	field               string
}

func (e *encoder) schema(s *schema) {
	e.buf = append(e.buf, `{"type":"`...)
	e.buf = append(e.buf, s.typ...)
	e.buf = append(e.buf, '"')
	if s.optional {
		e.buf = append(e.buf, `,"optional":true`...)
	}
	for _, part := range []struct {
		name string
		s    *schema
	}{{"items", s.items}, {"keys", s.keys}, {"values", s.values}} {
		if part.s != nil {
			e.buf = append(e.buf, `,"`...)
			e.buf = append(e.buf, part.name...)
			e.buf = append(e.buf, `":`...)
			e.schema(part.s)
		}
	}
	if len(s.fields) > 0 {
		e.buf = append(e.buf, `,"fields":[`...)
		for i, f := range s.fields {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			e.schema(f)
		}
		e.buf = append(e.buf, ']')
	}
	e.field(s.field)
}

var errSchemaDepth = errors.New("value nested too deep to infer its schema")

// schemaOf infers the schema of v, of type t (v may be invalid where only
// the type is known): by kind, lists from their first element, maps with
// string keys as structs, structs by their fields' JSON names. It returns
// nil where nothing can be inferred (a nil interface).
func schemaOf(v reflect.Value, t reflect.Type, depth int) (*schema, error) {
	if t == nil {
		return nil, nil
	}
	if depth > 64 {
		return nil, errSchemaDepth
	}
	depth++
	switch t.Kind() {
	case reflect.Bool:
		return &schema{typ: "boolean"}, nil
	case reflect.Int, reflect.Int64, reflect.Uint, reflect.Uint64, reflect.Uint32:
		return &schema{typ: "int64"}, nil
	case reflect.Int32, reflect.Uint16:
		return &schema{typ: "int32"}, nil
	case reflect.Int16, reflect.Uint8:
		return &schema{typ: "int16"}, nil
	case reflect.Int8:
		return &schema{typ: "int8"}, nil
	case reflect.Float32:
		return &schema{typ: "float"}, nil
	case reflect.Float64:
		return &schema{typ: "double"}, nil
	case reflect.String:
		return &schema{typ: "string"}, nil
	case reflect.Pointer:
		var elem reflect.Value
		if v.IsValid() && !v.IsNil() {
			elem = v.Elem()
		}
		s, err := schemaOf(elem, t.Elem(), depth)
		if s != nil {
			s.optional = true
		}
		return s, err
	case reflect.Interface:
		if !v.IsValid() || v.IsNil() {
			return nil, nil
		}
		return schemaOf(v.Elem(), v.Elem().Type(), depth)
	case reflect.Array, reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return &schema{typ: "bytes", optional: true}, nil
		}
		var first reflect.Value
		if v.IsValid() && v.Len() > 0 {
			first = v.Index(0)
		}
		items, err := schemaOf(first, t.Elem(), depth)
		if err != nil {
			return nil, err
		}
		if items == nil {
			items = &schema{typ: "string", optional: true}
		}
		return &schema{typ: "array", optional: true, items: items}, nil
	case reflect.Map:
		if t.Key().Kind() == reflect.String {
			s := &schema{typ: "struct", optional: true}
			if !v.IsValid() {
				return s, nil
			}
			keys := v.MapKeys()
			slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
			for _, k := range keys {
				f, err := schemaOf(v.MapIndex(k), t.Elem(), depth)
				if err != nil {
					return nil, err
				}
				if f == nil {
					f = &schema{typ: "string", optional: true}
				}
				f.field = k.String()
				s.fields = append(s.fields, f)
			}
			return s, nil
		}
		var key, value reflect.Value
		if v.IsValid() {
			it := v.MapRange()
			if it.Next() {
				key, value = it.Key(), it.Value()
			}
		}
		keys, err := schemaOf(key, t.Key(), depth)
		if err != nil {
			return nil, err
		}
		values, err := schemaOf(value, t.Elem(), depth)
		if err != nil {
			return nil, err
		}
		return &schema{typ: "map", keys: keys, values: values}, nil
	case reflect.Struct:
		s := &schema{typ: "struct"}
		for i := range t.NumField() {
			sf := t.Field(i)
			name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			if name == "" {
				name = sf.Name
			}
			var fv reflect.Value
			if v.IsValid() {
				fv = v.Field(i)
			}
			f, err := schemaOf(fv, sf.Type, depth)
			if err != nil {
				return nil, err
			}
			if f == nil {
				f = &schema{typ: "string", optional: true}
			}
			f.field = name
			s.fields = append(s.fields, f)
		}
		return s, nil
	}
	return nil, fmt.Errorf("a value of type %v has no Kafka Connect schema", t)
}
