package postgres

import "testing"

func TestRFC3339(t *testing.T) {
	for _, tt := range []struct {
		text  string
		zoned bool
		want  string
	}{
		{"2026-01-02 03:04:05", false, "2026-01-02T03:04:05Z"},
		{"2026-01-02 03:04:05.123456", false, "2026-01-02T03:04:05.123456Z"},
		{"2026-01-02 03:04:05.5+00", true, "2026-01-02T03:04:05.5Z"},
		// Other shapes stay PostgreSQL's text, which the destination casts back.
		{"0001-01-01 00:00:00 BC", false, "0001-01-01 00:00:00 BC"},
		{"0001-01-01 00:00:00.25 BC", false, "0001-01-01 00:00:00.25 BC"},
		{"0001-01-01 00:00:00+00 BC", true, "0001-01-01 00:00:00+00 BC"},
		{"infinity", false, "infinity"},
		{"-infinity", true, "-infinity"},
		{"2026-01-02 03:04:05+02", true, "2026-01-02 03:04:05+02"},
		{"12026-01-02 03:04:05", false, "12026-01-02 03:04:05"},
		{"2026-01-02 03:04:05.", false, "2026-01-02 03:04:05."},
	} {
		if got := rfc3339([]byte(tt.text), tt.zoned); got != tt.want {
			t.Errorf("rfc3339(%q, %v) = %q, want %q", tt.text, tt.zoned, got, tt.want)
		}
	}
}
