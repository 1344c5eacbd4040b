package sdktest

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/connkit/connkit/sdk"
)

// TestRecord is the record the destination checks write by default: key
// {"id": id}, payload {"id": id, "name": "sdktest-<id>"} ("sdktest-<id>
// updated" for an update, none for a delete), as structured data or as raw
// JSON, at position "sdktest-<id>".
func TestRecord(id int, op sdk.Operation, structured bool) sdk.Record {
	key := map[string]any{"id": id}
	name := fmt.Sprintf("sdktest-%d", id)
	if op == sdk.OperationUpdate {
		name += " updated"
	}
	payload := map[string]any{"id": id, "name": name}
	r := sdk.Record{
		Position:  sdk.Position(fmt.Sprintf("sdktest-%d", id)),
		Operation: op,
		Metadata:  sdk.Metadata{},
	}
	if structured {
		r.Key = sdk.StructuredData(key)
		if op != sdk.OperationDelete {
			r.Payload.After = sdk.StructuredData(payload)
		}
		return r
	}
	k, _ := json.Marshal(key)
	r.Key = sdk.RawData(k)
	if op != sdk.OperationDelete {
		p, _ := json.Marshal(payload)
		r.Payload.After = sdk.RawData(p)
	}
	return r
}

// ids hands out record ids unique within the test process, so that checks
// writing to the same system never collide.
var ids atomic.Int64

func nextIDs(n int) int { return int(ids.Add(int64(n))) - n + 1 }

// fields returns d's fields, each rendered with fmt.Sprint so that numbers
// compare equal whatever their Go type: a structured payload's fields, or a
// raw one's parsed as a JSON object. ok is false if d has no fields.
func fields(d opencdc.Data) (map[string]string, bool) {
	f, err := sdk.FieldsOf(d)
	if err != nil || d == nil {
		return nil, false
	}
	out := make(map[string]string, len(f))
	for k, v := range f {
		switch v := v.(type) {
		case []byte:
			out[k] = string(v)
		default:
			out[k] = fmt.Sprint(v)
		}
	}
	return out, true
}

// findWritten matches records written with what ReadBack returned: for
// each written record, the read-back records whose payload has its id.
// Written records without an id field are skipped.
func findWritten(written, read []opencdc.Record) (missing, duplicated, differ []string) {
	byID := map[string][]map[string]string{}
	for _, r := range read {
		f, ok := fields(r.Payload.After)
		if !ok {
			continue
		}
		if id, ok := f["id"]; ok {
			byID[id] = append(byID[id], f)
		}
	}
	for i, w := range written {
		want, ok := fields(w.Payload.After)
		if !ok || want["id"] == "" {
			continue
		}
		got := byID[want["id"]]
		switch {
		case len(got) == 0:
			missing = append(missing, string(w.Position))
		case len(got) > 1:
			duplicated = append(duplicated, string(w.Position))
		default:
			for _, k := range slices.Sorted(maps.Keys(want)) {
				if v, ok := got[0][k]; !ok || v != want[k] {
					read := strconv.Quote(v)
					if !ok {
						read = "no such field"
					}
					differ = append(differ, fmt.Sprintf("record %d (position %q): payload.after.%s: wrote %q, read %s", i, w.Position, k, want[k], read))
					break // the first field that differs says enough
				}
			}
		}
	}
	return missing, duplicated, differ
}

// firstOf lists the first few of items, and how many more there are.
func firstOf(items []string) string {
	const n = 5
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:n], ", "), len(items)-n)
}
