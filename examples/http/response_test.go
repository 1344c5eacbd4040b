package httpsink

import (
	"math"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/matryer/is"
)

// Retry-After is a number of seconds or an HTTP date; anything else, a
// wait in the past or none at all is no wait.
func TestRetryAfterReadsSecondsAndDates(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		header string
		want   time.Duration
	}{
		{"", 0},
		{"0", 0},
		{"120", 2 * time.Minute},
		{" 5 ", 5 * time.Second},
		{"-3", 0},
		{"1.5", 0},
		{"99999999999999999999", 0}, // not an int64
		{"9223372036854775807", math.MaxInt64},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{"Sat, 28 Nov 2026 12:00:30 GMT", 30 * time.Second},
		{"Saturday, 28-Nov-26 12:01:00 GMT", time.Minute}, // RFC 850
		{"Sat Nov 28 12:00:10 2026", 10 * time.Second},    // asctime
		{now.Add(-time.Hour).Format(http.TimeFormat), 0},
		{"tomorrow", 0},
	} {
		if got := retryAfter(tt.header, now); got != tt.want {
			t.Errorf("Retry-After %q: got %v, want %v", tt.header, got, tt.want)
		}
	}
}

// An error quotes the start of a response's body on one line.
func TestExcerptIsOneShortLine(t *testing.T) {
	for _, tt := range []struct {
		body string
		max  int
		want string
	}{
		{"", 10, ""},
		{"  \n ", 10, ""},
		{"bad\nrecord\t 7 ", 20, "bad record 7"},
		{"0123456789abc", 10, "0123456789…"},
		{"ééééé", 5, "éé…"}, // cut before a rune, not inside it
		{"a\xffb", 10, "a\uFFFDb"},
	} {
		if got := excerpt([]byte(tt.body), tt.max); got != tt.want {
			t.Errorf("excerpt(%q, %d) = %q, want %q", tt.body, tt.max, got, tt.want)
		}
	}
}

// What an error names of the URL leaves out what may be a secret.
func TestRedactLeavesOutCredentialsAndQuery(t *testing.T) {
	is := is.New(t)
	for raw, want := range map[string]string{
		"https://ada:secret@example.com/records?token=hush#top": "https://example.com/records?…",
		"https://ada@example.com:8443/records":                  "https://example.com:8443/records",
		"http://127.0.0.1:8080/":                                "http://127.0.0.1:8080/",
	} {
		u, err := url.Parse(raw)
		is.NoErr(err)
		is.Equal(redact(u), want)
	}
}

// A record's bytes go in the array as they are if they are JSON, as a
// string if they are other text; other bytes cannot.
func TestElementKeepsJSONAndQuotesText(t *testing.T) {
	is := is.New(t)
	for in, want := range map[string]string{
		`{"a":1}`:     `{"a":1}`,
		`[1, 2]`:      `[1, 2]`,
		"plain text":  `"plain text"`,
		"line\nbreak": `"line\nbreak"`,
		`{"torn":`:    `"{\"torn\":"`,
	} {
		got, err := element([]byte(in))
		is.NoErr(err)
		is.Equal(string(got), want)
	}
	_, err := element([]byte{0xff})
	is.True(err != nil)
}
