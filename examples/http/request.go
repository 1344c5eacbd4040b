package httpsink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/connkit/connkit/sdk"
)

// post sends elems in one request and says what came of it: nil for a
// 2xx; else the error that response makes of the status, or failed of a
// request that got no response.
func (d *Destination) post(ctx context.Context, elems [][]byte) error {
	rctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, d.url, newBody(elems))
	if err != nil {
		return fmt.Errorf("POST %s: %w", d.target, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", userAgent)
	resp, err := d.client.Do(req)
	if err != nil {
		return d.failed(ctx, err)
	}
	defer drain(resp.Body)
	return d.response(resp)
}

// newBody returns the JSON array of elems.
func newBody(elems [][]byte) io.Reader {
	size := 2 + len(elems)
	for _, e := range elems {
		size += len(e)
	}
	b := make([]byte, 0, size)
	b = append(b, '[')
	for i, e := range elems {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, e...)
	}
	return bytes.NewReader(append(b, ']'))
}

// keepPost follows a redirect that keeps the request a POST with its body
// (307, 308) and not one that would turn it into a GET without one (301,
// 302, 303): a server that answered that GET with a 2xx would have
// acknowledged records it never got. The redirect is then the response.
func keepPost(req *http.Request, via []*http.Request) error {
	if req.Method != http.MethodPost {
		return http.ErrUseLastResponse
	}
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	return nil
}

// failed says what an error of Client.Do means: the Write's context is
// done, and the error says so; or the request did not reach the server or
// its response did not come back in time, which is retryable.
func (d *Destination) failed(ctx context.Context, err error) error {
	// A *url.Error's text repeats the URL, with its user name and query.
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err
	}
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("POST %s: %w", d.target, cerr)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return sdk.Retryable(fmt.Errorf("POST %s: no response within %v (the timeout parameter): %w", d.target, d.timeout, err))
	}
	return sdk.Retryable(fmt.Errorf("POST %s: %w", d.target, err))
}

// drain reads what is left of a response's body, up to a limit, so that
// its connection can serve another request, and closes it.
func drain(body io.ReadCloser) {
	io.Copy(io.Discard, io.LimitReader(body, 64<<10))
	body.Close()
}
