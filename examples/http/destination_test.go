package httpsink_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	httpsink "github.com/connkit/connkit/examples/http"
	"github.com/connkit/connkit/middleware/format"
	"github.com/connkit/connkit/sdk"
	"github.com/matryer/is"
)

// A Write is one POST of a JSON array whose elements are the records'
// bytes in the record format, as Record.Bytes gives them.
func TestAWriteIsOnePostOfTheRecordsAsAJSONArray(t *testing.T) {
	is := is.New(t)
	e := newEndpoint(t, nil)
	d := e.open(t)
	records := testRecords(5)
	template, err := format.New(format.Template, `{{printf "%s" .Position}}`)
	is.NoErr(err)
	records[3].SetSerializer(template) // as sdk.record.format does: text, sent as a JSON string

	n, err := d.Write(t.Context(), records)
	is.NoErr(err)
	is.Equal(n, len(records))
	is.Equal(e.requestCount(), 1)
	for i, r := range records {
		want := r.Bytes()
		if i == 3 {
			want = []byte(`"sdktest-4"`)
		}
		if !bytes.Equal(e.elements[i], want) {
			t.Errorf("element %d is %s, want %s", i, e.elements[i], want)
		}
	}
}

// A 429 or a 5xx is the server's: the Write is retryable after what the
// response's Retry-After says, in seconds or as a date, and 0 without one.
// The error names the status, quotes the body, and leaves out the URL's
// credentials and query.
func TestBusyServersAreRetriedAfterTheirRetryAfter(t *testing.T) {
	for _, tt := range []struct {
		name       string
		status     int
		retryAfter string
		min, max   time.Duration
	}{
		{"429 in seconds", http.StatusTooManyRequests, "7", 7 * time.Second, 7 * time.Second},
		{"503 as a date", http.StatusServiceUnavailable, time.Now().Add(time.Hour).UTC().Format(http.TimeFormat), 58 * time.Minute, time.Hour},
		{"503 without one", http.StatusServiceUnavailable, "", 0, 0},
		{"500 with one not understood", http.StatusInternalServerError, "soon", 0, 0},
		{"502 with a date past", http.StatusBadGateway, "Mon, 02 Jan 2006 15:04:05 GMT", 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			e := newEndpoint(t, func(w http.ResponseWriter, _ *http.Request, _ []sdk.Record) bool {
				if tt.retryAfter != "" {
					w.Header().Set("Retry-After", tt.retryAfter)
				}
				http.Error(w, "busy,\n  come back later", tt.status)
				return false
			})
			d, err := httpsink.Connector.Destination.New(map[string]string{"url": strings.Replace(e.URL, "http://", "http://ada:secret@", 1) + "/records?token=hush"})
			is.NoErr(err)
			is.NoErr(d.Open(t.Context()))
			defer d.Teardown(context.Background())

			n, err := d.Write(t.Context(), testRecords(3))
			is.Equal(n, 0)
			is.True(sdk.IsRetryable(err))
			var ra interface{ RetryAfter() time.Duration }
			is.True(errors.As(err, &ra))
			if got := ra.RetryAfter(); got < tt.min || got > tt.max {
				t.Errorf("retry after %v, want from %v to %v", got, tt.min, tt.max)
			}
			msg := err.Error()
			is.True(strings.Contains(msg, fmt.Sprintf("%d %s", tt.status, http.StatusText(tt.status))))
			is.True(strings.Contains(msg, "busy, come back later"))
			is.True(strings.Contains(msg, e.URL+"/records"))
			is.True(!strings.Contains(msg, "secret") && !strings.Contains(msg, "ada") && !strings.Contains(msg, "hush"))
			is.Equal(len(e.received()), 0)
		})
	}
}

// A 400 for a batch that holds a bad record is narrowed down to that
// record: the records before it are written, once each and in order, it
// is returned as a record fault at its index, and no other record is
// blamed or written.
func TestARefusedBatchIsNarrowedDownToTheRecordAtFault(t *testing.T) {
	for _, tt := range []struct {
		name    string
		records int
		bad     []int
		want    int // n, the first bad record's index
	}{
		{"a batch of one", 1, []int{0}, 0},
		{"the first of ten", 10, []int{0}, 0},
		{"in the middle of ten", 10, []int{6}, 6},
		{"the last of ten", 10, []int{9}, 9},
		{"two of a hundred", 100, []int{37, 38}, 37},
		{"three of 1000", 1000, []int{500, 999, 777}, 500},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			e := newEndpoint(t, refuseBad)
			d := e.open(t)
			records := testRecords(tt.records)
			for _, i := range tt.bad {
				records[i] = badRecord(i + 1)
			}

			n, err := d.Write(t.Context(), records)
			is.Equal(n, tt.want)
			is.True(sdk.IsRecordFault(err))
			is.True(strings.Contains(err.Error(), "400 Bad Request"))
			is.True(strings.Contains(err.Error(), fmt.Sprintf(`{"error": "record sdktest-%d is bad"}`, tt.want+1)))
			is.Equal(positions(e.received()), positions(records[:n]))
		})
	}
}

// A batch the server refuses as a whole, but takes in halves (a 413 for
// its size), is written whole.
func TestABatchTooLargeIsWrittenInHalves(t *testing.T) {
	is := is.New(t)
	e := newEndpoint(t, func(w http.ResponseWriter, _ *http.Request, records []sdk.Record) bool {
		if len(records) > 3 {
			http.Error(w, "at most 3 records", http.StatusRequestEntityTooLarge)
			return false
		}
		return true
	})
	d := e.open(t)
	records := testRecords(10)
	n, err := d.Write(t.Context(), records)
	is.NoErr(err)
	is.Equal(n, 10)
	is.Equal(positions(e.received()), positions(records))
}

// A retryable failure while a refused batch is narrowed down keeps the
// records written before it: n counts them.
func TestARetryableFailureWhileNarrowingDownCountsWhatWasWritten(t *testing.T) {
	is := is.New(t)
	records := testRecords(10)
	records[8] = badRecord(9)
	e := newEndpoint(t, func(w http.ResponseWriter, req *http.Request, batch []sdk.Record) bool {
		if !refuseBad(w, req, batch) {
			return false
		}
		for _, r := range batch {
			if string(r.Position) == "sdktest-7" {
				http.Error(w, "down", http.StatusServiceUnavailable)
				return false
			}
		}
		return true
	})
	d := e.open(t)
	// [1..10] refused for 9; [1..5] written; [6..10] refused; [6, 7] fails.
	n, err := d.Write(t.Context(), records)
	is.Equal(n, 5)
	is.True(sdk.IsRetryable(err))
	is.Equal(positions(e.received()), positions(records[:5]))
}

// A 401, 403, 404, 405, 407 or 415 refuses any request: no record is at
// fault, and the batch is not narrowed down.
func TestStatusesThatRefuseAnyRequestBlameNoRecord(t *testing.T) {
	for _, status := range []int{401, 403, 404, 405, 407, 415} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			is := is.New(t)
			e := newEndpoint(t, func(w http.ResponseWriter, _ *http.Request, _ []sdk.Record) bool {
				http.Error(w, "no", status)
				return false
			})
			d := e.open(t)
			n, err := d.Write(t.Context(), testRecords(10))
			is.Equal(n, 0)
			is.True(err != nil)
			is.True(!sdk.IsRecordFault(err))
			is.True(!sdk.IsRetryable(err))
			is.True(strings.Contains(err.Error(), fmt.Sprint(status)))
			is.Equal(e.requestCount(), 1)
		})
	}
}

// A redirect that would turn the POST into a GET is not followed: the
// records would be acknowledged without having been sent. One that keeps
// the POST is.
func TestOnlyRedirectsThatKeepThePostAreFollowed(t *testing.T) {
	for _, tt := range []struct {
		status int
		follow bool
	}{
		{http.StatusMovedPermanently, false},
		{http.StatusFound, false},
		{http.StatusSeeOther, false},
		{http.StatusTemporaryRedirect, true},
		{http.StatusPermanentRedirect, true},
	} {
		t.Run(fmt.Sprint(tt.status), func(t *testing.T) {
			is := is.New(t)
			e := newEndpoint(t, func(w http.ResponseWriter, req *http.Request, _ []sdk.Record) bool {
				if req.URL.Path == "/records" {
					http.Redirect(w, req, "/elsewhere", tt.status)
					return false
				}
				return true
			})
			d := e.open(t)
			records := testRecords(3)
			n, err := d.Write(t.Context(), records)
			if !tt.follow {
				is.Equal(n, 0)
				is.True(err != nil && strings.Contains(err.Error(), "/elsewhere"))
				is.Equal(len(e.received()), 0)
				return
			}
			is.NoErr(err)
			is.Equal(n, 3)
			is.Equal(positions(e.received()), positions(records))
		})
	}
}

// A server that cannot be reached, or that drops the connection, fails
// the Write as retryable: it may be back by the next attempt.
func TestNetworkErrorsAreRetryable(t *testing.T) {
	t.Run("nothing listens", func(t *testing.T) {
		is := is.New(t)
		l, err := net.Listen("tcp", "127.0.0.1:0")
		is.NoErr(err)
		addr := l.Addr().String()
		l.Close()
		d, err := httpsink.Connector.Destination.New(map[string]string{"url": "http://" + addr + "/records"})
		is.NoErr(err)
		is.NoErr(d.Open(t.Context())) // the server may come later
		defer d.Teardown(context.Background())
		n, err := d.Write(t.Context(), testRecords(3))
		is.Equal(n, 0)
		is.True(sdk.IsRetryable(err))
		is.True(strings.Contains(err.Error(), addr))
	})
	t.Run("the connection is dropped", func(t *testing.T) {
		is := is.New(t)
		e := newEndpoint(t, func(w http.ResponseWriter, _ *http.Request, _ []sdk.Record) bool {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Error(err)
				return false
			}
			conn.Close()
			return false
		})
		d := e.open(t)
		n, err := d.Write(t.Context(), testRecords(3))
		is.Equal(n, 0)
		is.True(sdk.IsRetryable(err))
	})
}

// A request that gets no response within the timeout is abandoned, and
// the Write is retryable.
func TestATimeoutIsRetryable(t *testing.T) {
	is := is.New(t)
	e := newEndpoint(t, func(_ http.ResponseWriter, req *http.Request, _ []sdk.Record) bool {
		<-req.Context().Done() // never answers: the client gives up
		return false
	})
	d := e.open(t, "timeout", "20ms")
	n, err := d.Write(t.Context(), testRecords(3))
	is.Equal(n, 0)
	is.True(sdk.IsRetryable(err))
	is.True(strings.Contains(err.Error(), "timeout"))
	is.Equal(len(e.received()), 0)
}

// A Write whose context is cancelled returns, with the context's error,
// whatever its request is waiting for; the timeout here would not end it.
func TestAWriteReturnsWhenItsContextIsCancelled(t *testing.T) {
	is := is.New(t)
	arrived := make(chan struct{})
	e := newEndpoint(t, func(_ http.ResponseWriter, req *http.Request, _ []sdk.Record) bool {
		close(arrived)
		<-req.Context().Done()
		return false
	})
	d := e.open(t, "timeout", "1h")
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-arrived
		cancel()
	}()
	n, err := d.Write(ctx, testRecords(3))
	is.Equal(n, 0)
	is.True(errors.Is(err, context.Canceled))
	is.True(!sdk.IsRecordFault(err))
}

// Record bytes that are neither JSON nor text cannot go in a JSON array:
// that record alone is refused, after the records before it are written.
func TestARecordThatCannotBeJSONIsRefusedAlone(t *testing.T) {
	is := is.New(t)
	e := newEndpoint(t, nil)
	d := e.open(t)
	records := testRecords(4)
	records[2].SetSerializer(binary{})
	n, err := d.Write(t.Context(), records)
	is.Equal(n, 2)
	is.True(sdk.IsRecordFault(err))
	is.Equal(positions(e.received()), positions(records[:2]))
}

// binary is a record format whose bytes are not text.
type binary struct{}

func (binary) Serialize(sdk.Record) ([]byte, error) { return []byte{0xff, 0xfe, 0x00}, nil }

// A URL that is not an http or https URL with a host fails Configure,
// naming the parameter and leaving out any credentials.
func TestConfigureRefusesURLsThatAreNotHTTP(t *testing.T) {
	for _, url := range []string{
		"ftp://ada:secret@example.com/records",
		"example.com/records",
		"localhost:8080",
		"http://",
		"http://ada:secret@exa mple.com/",
		"http://[::1",
	} {
		t.Run(url, func(t *testing.T) {
			_, err := httpsink.Connector.Destination.New(map[string]string{"url": url})
			if err == nil || !strings.Contains(err.Error(), `parameter "url"`) || strings.Contains(err.Error(), "secret") {
				t.Fatalf("Configure returned %v, want an error naming url without its credentials", err)
			}
		})
	}
}
