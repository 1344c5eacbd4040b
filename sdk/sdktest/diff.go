package sdktest

import (
	"bytes"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/connkit/connkit/sdk"
)

// DiffRecords compares the records got with the records want and returns ""
// if they are equal, or what a test failure should say: the first record
// that differs (its index and position), its first field that differs, as
// a path such as payload.after.name with both values, and how many more
// records differ. It reads better than printing both slices, which puts
// every record on one line:
//
//	record 3 (position "p3"): payload.after.name: got "Ada", want "Grace"; 2 more records differ
func DiffRecords(got, want []sdk.Record) string {
	first, more := -1, 0
	var what string
	for i := range max(len(got), len(want)) {
		var d string
		switch {
		case i >= len(got):
			d = "missing"
		case i >= len(want):
			d = "not expected"
		default:
			d = DiffRecord(got[i], want[i])
		}
		if d == "" {
			continue
		}
		if first < 0 {
			first, what = i, d
		} else {
			more++
		}
	}
	if first < 0 {
		return ""
	}
	pos := want
	if first >= len(want) {
		pos = got
	}
	s := fmt.Sprintf("record %d (position %q): %s", first, pos[first].Position, what)
	switch {
	case len(got) != len(want):
		s += fmt.Sprintf("; got %d records, want %d", len(got), len(want))
	case more == 1:
		s += "; 1 more record differs"
	case more > 1:
		s += fmt.Sprintf("; %d more records differ", more)
	}
	return s
}

// DiffRecord returns "" if got and want are equal, or their first field
// that differs, as a path (position, operation, metadata["name"], key,
// payload.before, payload.after, then .field for structured data) with
// both values.
func DiffRecord(got, want sdk.Record) string {
	if !bytes.Equal(got.Position, want.Position) {
		return diffValues("position", string(got.Position), string(want.Position))
	}
	if got.Operation != want.Operation {
		return fmt.Sprintf("operation: got %v, want %v", got.Operation, want.Operation)
	}
	for _, k := range slices.Sorted(maps.Keys(union(got.Metadata, want.Metadata))) {
		g, gok := got.Metadata[k]
		w, wok := want.Metadata[k]
		switch {
		case !gok:
			return fmt.Sprintf("metadata[%q]: missing, want %q", k, w)
		case !wok:
			return fmt.Sprintf("metadata[%q]: got %q, want none", k, g)
		case g != w:
			return diffValues(fmt.Sprintf("metadata[%q]", k), g, w)
		}
	}
	if d := diffData("key", got.Key, want.Key); d != "" {
		return d
	}
	if d := diffData("payload.before", got.Payload.Before, want.Payload.Before); d != "" {
		return d
	}
	return diffData("payload.after", got.Payload.After, want.Payload.After)
}

func union(a, b map[string]string) map[string]string {
	m := maps.Clone(a)
	if m == nil {
		m = map[string]string{}
	}
	maps.Copy(m, b)
	return m
}

// diffData compares a key or payload: structured data field by field, raw
// data as bytes.
func diffData(path string, got, want opencdc.Data) string {
	if isNil(got) && isNil(want) {
		return ""
	}
	gs, gok := got.(opencdc.StructuredData)
	ws, wok := want.(opencdc.StructuredData)
	switch {
	case gok && wok:
		return diffMaps(path, gs, ws)
	case gok != wok || isNil(got) != isNil(want):
		return fmt.Sprintf("%s: got %s, want %s", path, describe(got), describe(want))
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		return diffValues(path, string(got.Bytes()), string(want.Bytes()))
	}
	return ""
}

func isNil(d opencdc.Data) bool {
	switch d := d.(type) {
	case nil:
		return true
	case opencdc.RawData:
		return d == nil
	case opencdc.StructuredData:
		return d == nil
	}
	return false
}

func describe(d opencdc.Data) string {
	switch d := d.(type) {
	case opencdc.StructuredData:
		if d != nil {
			return fmt.Sprintf("structured data %v", map[string]any(d))
		}
	case opencdc.RawData:
		if d != nil {
			return fmt.Sprintf("raw data %q", []byte(d))
		}
	}
	return "no data"
}

// diffMaps compares structured data's fields in name order, descending
// into nested maps.
func diffMaps(path string, got, want map[string]any) string {
	keys := slices.Sorted(maps.Keys(got))
	for k := range want {
		if _, ok := got[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		p := path + "." + k
		g, gok := got[k]
		w, wok := want[k]
		switch {
		case !gok:
			return fmt.Sprintf("%s: missing, want %s", p, show(w))
		case !wok:
			return fmt.Sprintf("%s: got %s, want none", p, show(g))
		}
		gm, gIsMap := asMap(g)
		wm, wIsMap := asMap(w)
		if gIsMap && wIsMap {
			if d := diffMaps(p, gm, wm); d != "" {
				return d
			}
			continue
		}
		if !reflect.DeepEqual(g, w) {
			return diffValues(p, g, w)
		}
	}
	return ""
}

func asMap(v any) (map[string]any, bool) {
	switch v := v.(type) {
	case map[string]any:
		return v, true
	case opencdc.StructuredData:
		return v, true
	}
	return nil, false
}

// diffValues says how two values differ; when they print the same, their
// types differ, and it names them.
func diffValues(path string, got, want any) string {
	g, w := show(got), show(want)
	if g == w {
		return fmt.Sprintf("%s: got %s (%T), want %s (%T)", path, g, got, w, want)
	}
	return fmt.Sprintf("%s: got %s, want %s", path, g, w)
}

func show(v any) string {
	switch v := v.(type) {
	case string:
		return strconv.Quote(v)
	case []byte:
		return strconv.Quote(string(v))
	case nil:
		return "null"
	}
	return fmt.Sprint(v)
}
