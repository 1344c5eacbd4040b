package postgres

import (
	"encoding/json"
	"testing"

	"github.com/jackc/pglogrepl"
	"github.com/matryer/is"
)

// TestPositionEncoding checks the hand-written encoding against
// encoding/json and the round trip through parsePosition.
func TestPositionEncoding(t *testing.T) {
	is := is.New(t)
	for _, p := range []position{
		{Table: `"public"."a"`, Key: []string{"1"}},
		{Table: `"s"."we""ird"`, Key: []string{"x\\y", "tab\there\x01", "ünï €", ""}},
		{LSN: "0/0"},
		{LSN: "16/B374D848", Index: 7},
		{LSN: "FFFFFFFF/FFFFFFFF", Index: 1},
		{LSN: "0/16B3748", Index: 2, Resumed: &resumed{Table: `"public"."a"`, Key: []string{"40"}, Until: "0/16C0000"}},
	} {
		want, err := json.Marshal(p)
		is.NoErr(err)
		is.Equal(string(p.bytes()), string(want))
		back, err := parsePosition(p.bytes())
		is.NoErr(err)
		is.Equal(back.Table, p.Table)
		is.Equal(back.LSN, p.LSN)
		is.Equal(back.Index, p.Index)
		is.Equal(back.Resumed, p.Resumed)
		if p.snapshot() {
			is.Equal(back.Key, p.Key)
		} else {
			lsn, _ := pglogrepl.ParseLSN(p.LSN)
			is.Equal(back.lsn(), lsn)
			fast, err := positionLSN(p.bytes())
			is.NoErr(err)
			is.Equal(fast, lsn)
		}
	}
}

// TestPositionResumedErrors checks that a change's resume point must name
// a table and a consistent point, and only a change's position has one.
func TestPositionResumedErrors(t *testing.T) {
	for _, b := range []string{
		`{"lsn":"0/1","resumed":{"table":"a","until":"x"}}`,
		`{"lsn":"0/1","resumed":{"until":"0/2"}}`,
		`{"table":"a","key":["1"],"resumed":{"table":"a","until":"0/2"}}`,
	} {
		if _, err := parsePosition([]byte(b)); err == nil {
			t.Errorf("parsePosition(%s): no error", b)
		}
	}
}

func FuzzPosition(f *testing.F) {
	f.Add(`"public"."a"`, "1", "x")
	f.Fuzz(func(t *testing.T, table, k1, k2 string) {
		if table == "" {
			return
		}
		p := position{Table: table, Key: []string{k1, k2}}
		var back position
		if err := json.Unmarshal(p.bytes(), &back); err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(p)
		var viaJSON position
		_ = json.Unmarshal(want, &viaJSON)
		if back.Table != viaJSON.Table || back.Key[0] != viaJSON.Key[0] || back.Key[1] != viaJSON.Key[1] {
			t.Fatalf("got %q, want %q", p.bytes(), want)
		}
	})
}
