package source

import (
	"testing"
	"time"
)

func TestTimestamp(t *testing.T) {
	for _, tt := range []struct {
		text  string
		zoned bool
		want  any
	}{
		{"2026-01-02 03:04:05", false, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
		{"2026-01-02 03:04:05.123456", false, time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC)},
		{"2026-01-02 03:04:05.5+00", true, time.Date(2026, 1, 2, 3, 4, 5, 500000000, time.UTC)},
		{"0001-01-01 00:00:00.000001", false, time.Date(1, 1, 1, 0, 0, 0, 1000, time.UTC)},
		// Other shapes stay PostgreSQL's text, which the destination casts back.
		{"0001-01-01 00:00:00 BC", false, "0001-01-01 00:00:00 BC"},
		{"0001-01-01 00:00:00.25 BC", false, "0001-01-01 00:00:00.25 BC"},
		{"0001-01-01 00:00:00+00 BC", true, "0001-01-01 00:00:00+00 BC"},
		{"infinity", false, "infinity"},
		{"-infinity", true, "-infinity"},
		{"2026-01-02 03:04:05+02", true, "2026-01-02 03:04:05+02"},
		{"12026-01-02 03:04:05", false, "12026-01-02 03:04:05"},
		{"2026-01-02 03:04:05.", false, "2026-01-02 03:04:05."},
		{"2026-13-02 03:04:05", false, "2026-13-02 03:04:05"},
		{"2026-02-29 03:04:05", false, "2026-02-29 03:04:05"},
		{"2026-01-02 24:00:00", false, "2026-01-02 24:00:00"},
		{"2026-01-02 03:04:05.1234567891", false, "2026-01-02 03:04:05.1234567891"},
		{"2026-01-02 03:04:05.123456789", false, time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)},
		{"2026-0a-02 03:04:05", false, "2026-0a-02 03:04:05"},
		{"2026-01-02x03:04:05", false, "2026-01-02x03:04:05"},
	} {
		got := timestamp([]byte(tt.text), tt.zoned)
		if g, ok := got.(time.Time); ok {
			if w, ok := tt.want.(time.Time); !ok || !g.Equal(w) || g.Location() != time.UTC {
				t.Errorf("timestamp(%q, %v) = %v, want %v", tt.text, tt.zoned, got, tt.want)
			}
		} else if got != tt.want {
			t.Errorf("timestamp(%q, %v) = %#v, want %#v", tt.text, tt.zoned, got, tt.want)
		}
	}
}

// BenchmarkTimestamp parses a timestamptz as the snapshot and pgoutput
// deliver it.
func BenchmarkTimestamp(b *testing.B) {
	text := []byte("2026-01-02 03:04:05.123456+00")
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := timestamp(text, true).(time.Time); !ok {
			b.Fatal("not parsed")
		}
	}
}
