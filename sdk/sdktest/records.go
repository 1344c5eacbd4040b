package sdktest

import (
	"encoding/json"
	"fmt"
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
	for _, w := range written {
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
			var diffs []string
			for k, v := range want {
				if got[0][k] != v {
					diffs = append(diffs, fmt.Sprintf("%s: wrote %q, read %q", k, v, got[0][k]))
				}
			}
			if len(diffs) > 0 {
				differ = append(differ, fmt.Sprintf("%s (%s)", w.Position, strings.Join(diffs, "; ")))
			}
		}
	}
	return missing, duplicated, differ
}
