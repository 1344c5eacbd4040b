package httpsink_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	httpsink "github.com/connkit/connkit/examples/http"
	"github.com/connkit/connkit/sdk"
	"github.com/connkit/connkit/sdk/sdktest"
)

// endpoint is a fake HTTP endpoint on loopback, a real server: it decodes
// each request's JSON array of records and asks its answer what to reply.
// The records of a request answered with a 2xx are kept, in the order
// they came, with the elements they came as.
type endpoint struct {
	*httptest.Server
	t *testing.T
	// answer, if set, may refuse a request by writing a response that is
	// not a 2xx and returning false; it runs outside the lock, so it may
	// wait. Nil accepts every request.
	answer func(w http.ResponseWriter, req *http.Request, records []sdk.Record) (accept bool)

	mu       sync.Mutex
	requests int               // every request, answered or not
	kept     []sdk.Record      // the records of accepted requests
	elements []json.RawMessage // their elements, as they came
}

func newEndpoint(t *testing.T, answer func(http.ResponseWriter, *http.Request, []sdk.Record) bool) *endpoint {
	e := &endpoint{t: t, answer: answer}
	e.Server = httptest.NewServer(http.HandlerFunc(e.serve))
	t.Cleanup(e.Close)
	return e
}

func (e *endpoint) serve(w http.ResponseWriter, req *http.Request) {
	var elements []json.RawMessage
	if err := json.NewDecoder(req.Body).Decode(&elements); err != nil || req.Method != http.MethodPost || req.Header.Get("Content-Type") != "application/json" {
		e.t.Errorf("got a %s request of %s, not a POST of a JSON array: %v", req.Method, req.Header.Get("Content-Type"), err)
		http.Error(w, "not a POST of a JSON array", http.StatusBadRequest)
		return
	}
	records := make([]sdk.Record, len(elements))
	for i, el := range elements {
		if el[0] != '{' {
			continue // not a record in OpenCDC JSON: a template's text, say
		}
		if err := json.Unmarshal(el, &records[i]); err != nil {
			e.t.Errorf("element %d is not an OpenCDC record: %v", i, err)
		}
	}
	e.mu.Lock()
	e.requests++
	e.mu.Unlock()
	if e.answer != nil && !e.answer(w, req, records) {
		return
	}
	e.mu.Lock()
	e.kept = append(e.kept, records...)
	e.elements = append(e.elements, elements...)
	e.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

// received returns the records of the requests accepted so far.
func (e *endpoint) received() []sdk.Record {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.kept)
}

// requestCount returns how many requests the endpoint got.
func (e *endpoint) requestCount() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.requests
}

// open returns the destination, opened, for the endpoint's URL with the
// configuration extra adds.
func (e *endpoint) open(t *testing.T, extra ...string) sdk.Destination {
	t.Helper()
	cfg := map[string]string{"url": e.URL + "/records"}
	for i := 0; i+1 < len(extra); i += 2 {
		cfg[extra[i]] = extra[i+1]
	}
	d, err := httpsink.Connector.Destination.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Teardown(context.Background()) })
	return d
}

// testRecord returns record id, structured if id is odd, else raw JSON.
func testRecord(id int) sdk.Record {
	return sdktest.TestRecord(id, sdk.OperationCreate, id%2 == 1)
}

// testRecords returns records 1 to n.
func testRecords(n int) []sdk.Record {
	records := make([]sdk.Record, n)
	for i := range records {
		records[i] = testRecord(i + 1)
	}
	return records
}

// badRecord returns record id as one the endpoint of refuseBad refuses:
// its payload says "bad": true.
func badRecord(id int) sdk.Record {
	r := sdktest.TestRecord(id, sdk.OperationCreate, true)
	r.Payload.After.(sdk.StructuredData)["bad"] = true
	return r
}

func isBad(r sdk.Record) bool {
	after, ok := r.Payload.After.(sdk.StructuredData)
	return ok && after["bad"] == true
}

// refuseBad is an endpoint's answer: a 400 for any request that holds a
// bad record, naming it.
func refuseBad(w http.ResponseWriter, _ *http.Request, records []sdk.Record) bool {
	for _, r := range records {
		if isBad(r) {
			http.Error(w, fmt.Sprintf(`{"error": "record %s is bad"}`, r.Position), http.StatusBadRequest)
			return false
		}
	}
	return true
}

// positions returns the records' positions: unique, they say which
// records arrived, in which order, and how many times.
func positions(records []sdk.Record) string {
	p := make([]string, len(records))
	for i, r := range records {
		p[i] = string(r.Position)
	}
	return strings.Join(p, " ")
}
