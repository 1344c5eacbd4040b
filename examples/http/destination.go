package httpsink

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/connkit/connkit/sdk"
)

// maxIdleConnsPerHost is how many connections to the endpoint stay open
// between requests: more than the 32 Writes sdk.write.concurrency auto
// keeps in flight at most, so that each has a connection to reuse.
const maxIdleConnsPerHost = 64

// userAgent names the plugin in the server's logs.
var userAgent = "connkit-http/" + Connector.Version

// Destination POSTs each batch of records to a URL as a JSON array.
//
// It is an [sdk.ConcurrentDestination]: Write is safe to call while other
// Writes run. Its fields are set by NewDestination and Open and only read
// by Write, and an http.Client is safe for concurrent use; each Write
// builds its requests in buffers of its own.
type Destination struct {
	url     string // what requests go to, with any credentials
	target  string // the URL without them, for errors
	timeout time.Duration
	client  *http.Client // built by Open
}

// NewDestination returns a destination; it builds its client in Open.
func NewDestination(cfg Config) (*Destination, error) {
	u, err := parseURL(cfg.URL)
	if err != nil {
		return nil, err
	}
	return &Destination{url: u.String(), target: redact(u), timeout: cfg.Timeout}, nil
}

// WriteSplit lets any record go in any Write: each batch is a request of
// its own, and requests in flight together reach the server in any order,
// so the destination promises no order between batches.
func (d *Destination) WriteSplit() sdk.Split { return sdk.SplitFreely }

// Open builds the HTTP client. It does not reach the server, which may
// come up later: a Write that cannot reach it is retried.
func (d *Destination) Open(context.Context) error {
	d.client = &http.Client{
		Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          2 * maxIdleConnsPerHost,
			MaxIdleConnsPerHost:   maxIdleConnsPerHost,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ExpectContinueTimeout: time.Second,
		},
		CheckRedirect: keepPost,
	}
	return nil
}

// Write POSTs records as one JSON array, each element a record's bytes in
// the record format (Record.Bytes). If the server refuses the request for
// its data (a 4xx other than 408 and 429, which are retryable, and 401,
// 403, 404, 405, 407 and 415, which refuse any request), Write halves the
// batch and sends each half in turn, down to the record it refuses: the
// records before it are written, in order, and it is returned as an
// [sdk.RecordFault] with n its index. No record is in more than one
// request the server accepted.
func (d *Destination) Write(ctx context.Context, records []sdk.Record) (int, error) {
	elems := make([][]byte, len(records))
	for i, r := range records {
		e, unfit := element(r.Bytes())
		if unfit != nil {
			// Write those before it, then refuse it alone.
			if n, err := d.send(ctx, elems[:i]); err != nil {
				return n, err
			}
			return i, sdk.RecordFault(unfit)
		}
		elems[i] = e
	}
	return d.send(ctx, elems)
}

// element returns a record's bytes as an element of the JSON array: as
// they are if they are JSON (the record formats opencdc/json and
// debezium/json), as a JSON string if they are other text (a template's
// output). Bytes that are not text cannot be put in JSON.
func element(b []byte) ([]byte, error) {
	if json.Valid(b) {
		return b, nil
	}
	if !utf8.Valid(b) {
		return nil, errors.New("the record in the record format is neither JSON nor UTF-8 text, and cannot be sent in a JSON array")
	}
	return json.Marshal(string(b))
}

// send POSTs elems in one request and returns how many leading ones were
// written: all of them, or, if the server refuses them for their data,
// those of each half sent in turn, down to the one it refuses.
func (d *Destination) send(ctx context.Context, elems [][]byte) (int, error) {
	if len(elems) == 0 {
		return 0, nil
	}
	err := d.post(ctx, elems)
	var refused *refusal
	switch {
	case err == nil:
		return len(elems), nil
	case !errors.As(err, &refused):
		return 0, err
	case len(elems) == 1:
		return 0, sdk.RecordFault(err)
	}
	half := len(elems) / 2
	sdk.Logger(ctx).Debug("the server refused a batch; sending each half in turn to find the record at fault",
		"records", len(elems), "status", refused.status)
	n, err := d.send(ctx, elems[:half])
	if err != nil {
		return n, err
	}
	m, err := d.send(ctx, elems[half:])
	return half + m, err
}

// Teardown closes the connections the client keeps open.
func (d *Destination) Teardown(context.Context) error {
	if d.client != nil {
		d.client.CloseIdleConnections()
	}
	return nil
}
