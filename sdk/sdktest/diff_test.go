package sdktest

import (
	"testing"

	"github.com/connkit/connkit/sdk"
	"github.com/matryer/is"
)

func TestDiffRecord(t *testing.T) {
	base := func() sdk.Record {
		r := TestRecord(1, sdk.OperationCreate, true)
		r.Metadata["source"] = "a"
		r.Payload.After.(sdk.StructuredData)["address"] = map[string]any{"city": "Oslo"}
		return r
	}
	tests := []struct {
		name   string
		change func(*sdk.Record)
		want   string
	}{
		{"equal", func(*sdk.Record) {}, ""},
		{"position", func(r *sdk.Record) { r.Position = sdk.Position("x") }, `position: got "x", want "sdktest-1"`},
		{"operation", func(r *sdk.Record) { r.Operation = sdk.OperationUpdate }, `operation: got update, want create`},
		{"metadata value", func(r *sdk.Record) { r.Metadata["source"] = "b" }, `metadata["source"]: got "b", want "a"`},
		{"metadata extra", func(r *sdk.Record) { r.Metadata["z"] = "1" }, `metadata["z"]: got "1", want none`},
		{"metadata missing", func(r *sdk.Record) { delete(r.Metadata, "source") }, `metadata["source"]: missing, want "a"`},
		{"key field", func(r *sdk.Record) { r.Key = sdk.StructuredData{"id": 2} }, `key.id: got 2, want 1`},
		{"key kind", func(r *sdk.Record) { r.Key = sdk.RawData(`{"id":1}`) }, `key: got raw data "{\"id\":1}", want structured data map[id:1]`},
		{"payload field", func(r *sdk.Record) {
			r.Payload.After = sdk.StructuredData{"id": 1, "name": "Ada", "address": map[string]any{"city": "Oslo"}}
		}, `payload.after.name: got "Ada", want "sdktest-1"`},
		{"nested field", func(r *sdk.Record) {
			r.Payload.After = sdk.StructuredData{"id": 1, "name": "sdktest-1", "address": map[string]any{"city": "Bergen"}}
		}, `payload.after.address.city: got "Bergen", want "Oslo"`},
		{"same text, other type", func(r *sdk.Record) {
			r.Payload.After = sdk.StructuredData{"id": int64(1), "name": "sdktest-1", "address": map[string]any{"city": "Oslo"}}
		}, `payload.after.id: got 1 (int64), want 1 (int)`},
		{"field missing", func(r *sdk.Record) { delete(r.Payload.After.(sdk.StructuredData), "name") }, `payload.after.name: missing, want "sdktest-1"`},
		{"payload before", func(r *sdk.Record) { r.Payload.Before = sdk.RawData("old") }, `payload.before: got raw data "old", want no data`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			got := base()
			tt.change(&got)
			is.Equal(DiffRecord(got, base()), tt.want)
		})
	}
}

func TestDiffRecords(t *testing.T) {
	records := func(n int) []sdk.Record {
		out := make([]sdk.Record, n)
		for i := range out {
			out[i] = TestRecord(i, sdk.OperationCreate, i%2 == 0)
		}
		return out
	}
	tests := []struct {
		name      string
		got, want []sdk.Record
		change    func([]sdk.Record)
		wantDiff  string
	}{
		{"equal", records(20), records(20), func([]sdk.Record) {}, ""},
		{"one differs", records(20), records(20), func(r []sdk.Record) { r[3].Payload.After = sdk.RawData(`{"id":3}`) },
			`record 3 (position "sdktest-3"): payload.after: got "{\"id\":3}", want "{\"id\":3,\"name\":\"sdktest-3\"}"`},
		{"several differ", records(20), records(20), func(r []sdk.Record) {
			for i := 4; i < 20; i += 2 {
				r[i].Payload.After.(sdk.StructuredData)["name"] = "x"
			}
		}, `record 4 (position "sdktest-4"): payload.after.name: got "x", want "sdktest-4"; 7 more records differ`},
		{"one more differs", records(3), records(3), func(r []sdk.Record) { r[1].Operation, r[2].Operation = sdk.OperationDelete, sdk.OperationDelete },
			`record 1 (position "sdktest-1"): operation: got delete, want create; 1 more record differs`},
		{"too few", records(2), records(3), func([]sdk.Record) {}, `record 2 (position "sdktest-2"): missing; got 2 records, want 3`},
		{"too many", records(3), records(2), func([]sdk.Record) {}, `record 2 (position "sdktest-2"): not expected; got 3 records, want 2`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			tt.change(tt.got)
			is.Equal(DiffRecords(tt.got, tt.want), tt.wantDiff)
		})
	}
}
