package source

import (
	"encoding/json"
	"fmt"
	"math"
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
		{Table: `"public"."a"`, Key: []string{"40"}, Version: "4711"},
		{Table: `"public"."b"`, Key: []string{"7", "x"}, Version: "4712", LSN: "0/16B3F08"}, // an added table's row
		{Table: `"public"."logs"`, CTID: "(12,7)", Version: "4713"},                         // a keyless table's row
	} {
		want, err := json.Marshal(p)
		is.NoErr(err)
		is.Equal(string(p.bytes()), string(want))
		back, err := parsePosition(p.bytes())
		is.NoErr(err)
		is.Equal(back.Table, p.Table)
		is.Equal(back.LSN, p.LSN)
		is.Equal(back.Index, p.Index)
		is.Equal(back.Version, p.Version)
		is.Equal(back.CTID, p.CTID)
		if p.Table != "" {
			is.Equal(back.Key, p.Key)
		}
		if !p.snapshot() {
			lsn, _ := pglogrepl.ParseLSN(p.LSN)
			is.Equal(back.lsn(), lsn)
			fast, err := positionLSN(p.bytes())
			is.NoErr(err)
			is.Equal(fast, lsn)
		}
	}
}

// TestPositionVersionErrors checks that a row version is a transaction ID,
// and only in a snapshot position.
func TestPositionVersionErrors(t *testing.T) {
	for _, b := range []string{
		`{"table":"a","key":["1"],"v":"x"}`,
		`{"table":"a","key":["1"],"v":"4294967296"}`,
		`{"lsn":"0/1","v":"7"}`,
		`{"table":"a","ctid":"(x,1)"}`,
		`{"table":"a","ctid":"(1,70000)"}`,
		`{"table":"a","key":["1"],"ctid":"(1,1)"}`,
		`{"lsn":"0/1","ctid":"(1,1)"}`,
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

// TestParseTxSnapshot checks that a snapshot's text is read whole, and
// refused when it is not one.
func TestParseTxSnapshot(t *testing.T) {
	snap, err := parseTxSnapshot("740:745:743,741")
	if err != nil || snap.xmin != 740 || snap.xmax != 745 || len(snap.xip) != 2 || snap.xip[0] != 741 {
		t.Fatalf("parseTxSnapshot = %+v, %v", snap, err)
	}
	for _, s := range []string{"1:2", "3:2:", "1:5:x", "x:5:", "1:x:", ""} {
		if _, err := parseTxSnapshot(s); err == nil {
			t.Errorf("parseTxSnapshot(%q): no error", s)
		}
	}
}

// TestTxSnapshotSaw checks which row versions count as seen by a snapshot:
// before its xmin, and before its xmax unless running; across an epoch
// boundary; frozen and bootstrap IDs; a version older than the snapshot
// by more than the IDs assigned since.
func TestTxSnapshotSaw(t *testing.T) {
	snap, err := parseTxSnapshot("100:110:103,105")
	if err != nil {
		t.Fatal(err)
	}
	const horizon = 200
	for x, want := range map[uint32]bool{
		2: true, 1: true, 50: true, 99: true, 100: true, 103: false, 104: true,
		105: false, 109: true, 110: false, 150: false, 199: false,
		250: true, // not assigned before the horizon: from an earlier epoch
	} {
		if got := snap.saw(x, horizon); got != want {
			t.Errorf("saw(%d) = %v, want %v", x, got, want)
		}
	}

	// Epoch 1 (IDs 2^32 + n): the snapshot's xmin just before the wrap.
	const epoch = uint64(1) << 32
	snap, err = parseTxSnapshot(fmt.Sprintf("%d:%d:%d", epoch-10, epoch+5, epoch+3))
	if err != nil {
		t.Fatal(err)
	}
	for x, want := range map[uint32]bool{
		math.MaxUint32 - 20: true, math.MaxUint32 - 9: true, math.MaxUint32: true,
		3: false, 4: true, 6: false, 7: false, 8: true,
	} {
		if got := snap.saw(x, epoch+8); got != want {
			t.Errorf("across the wrap: saw(%d) = %v, want %v", x, got, want)
		}
	}
}
