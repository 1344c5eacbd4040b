package httpsink

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/connkit/connkit/sdk"
)

// refusal is a 4xx response that refuses a request for the records in it:
// a smaller request, without the record at fault, may be accepted.
type refusal struct {
	status int
	err    error
}

func (e *refusal) Error() string { return e.err.Error() }
func (e *refusal) Unwrap() error { return e.err }

// refusesAnyRequest holds the 4xx statuses that refuse a request whatever
// records it holds: the URL, the credentials or the content type is
// wrong, and no record is at fault.
var refusesAnyRequest = map[int]bool{
	http.StatusUnauthorized:         true,
	http.StatusForbidden:            true,
	http.StatusNotFound:             true,
	http.StatusMethodNotAllowed:     true,
	http.StatusProxyAuthRequired:    true,
	http.StatusUnsupportedMediaType: true,
}

// response says what resp means for the records of its request: nil for
// a 2xx; for a 429 or a 5xx, the server's failure, retryable after its
// Retry-After; for a 408, retryable; for another 4xx, a *refusal, unless
// it refuses any request; for anything else, an error.
func (d *Destination) response(resp *http.Response) error {
	s := resp.StatusCode
	if s >= 200 && s <= 299 {
		return nil
	}
	err := d.statusError(resp)
	switch {
	case s == http.StatusTooManyRequests || (s >= 500 && s <= 599):
		return sdk.RetryableAfter(err, retryAfter(resp.Header.Get("Retry-After"), time.Now()))
	case s == http.StatusRequestTimeout:
		return sdk.Retryable(err)
	case refusesAnyRequest[s]:
		return fmt.Errorf("%w (a status that refuses the request whatever records it holds: check the url parameter and its credentials)", err)
	case s >= 400 && s <= 499:
		return &refusal{status: s, err: err}
	case s >= 300 && s <= 399:
		return fmt.Errorf("%w (a redirect that would not resend the records: set the url parameter to where it leads)", err)
	}
	return err
}

// statusError is "POST url: status: excerpt of the body", with the
// response's Location and Retry-After if it has them.
func (d *Destination) statusError(resp *http.Response) error {
	msg := fmt.Sprintf("POST %s: %s", d.target, resp.Status)
	if loc, err := resp.Location(); err == nil {
		msg += fmt.Sprintf(" (Location: %s)", redact(loc))
	}
	if ra := resp.Header.Get("Retry-After"); ra != "" {
		msg += fmt.Sprintf(" (Retry-After: %s)", excerpt([]byte(ra), 40))
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4*maxExcerpt))
	if text := excerpt(b, maxExcerpt); text != "" {
		msg += ": " + text
	}
	return errors.New(msg)
}

// maxExcerpt is how many bytes of a response's body an error quotes.
const maxExcerpt = 200

// excerpt returns the start of b, up to max bytes of it, as one line of
// text: runs of white space as one space, bytes that are not UTF-8 as
// U+FFFD, and an ellipsis if b is longer.
func excerpt(b []byte, max int) string {
	s := strings.Join(strings.Fields(strings.ToValidUTF8(string(b), "\uFFFD")), " ")
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// retryAfter returns the wait a Retry-After header value asks for at now:
// a number of seconds or an HTTP date; 0 if it is absent, in the past or
// not understood.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		switch {
		case secs <= 0:
			return 0
		case secs > math.MaxInt64/int64(time.Second):
			return math.MaxInt64
		}
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
