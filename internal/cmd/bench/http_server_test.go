package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/matryer/is"
)

// postBody returns a request's body as the http destination sends it: a JSON
// array of the records' OpenCDC JSON, one record for each position.
func postBody(positions ...string) string {
	elems := make([]string, len(positions))
	for i, p := range positions {
		rec := opencdc.Record{Position: opencdc.Position(p), Operation: opencdc.OperationCreate,
			Payload: opencdc.Change{After: opencdc.StructuredData{"id": i}}}
		elems[i] = string(rec.Bytes())
	}
	return "[" + strings.Join(elems, ",") + "]"
}

// The server accepts each POST in turn and counts every position of the
// records it accepted, a position that comes again as a duplicate; it
// accepts nothing of a body it cannot read, and counts no other method.
// One request at a time never meets a limit of one.
func TestSinkServerCountsThePositionsItAccepted(t *testing.T) {
	is := is.New(t)
	srv := newSinkServer(0, 1, 0)
	ts := httptest.NewServer(srv)
	defer ts.Close()
	post := func(body string) *http.Response {
		resp, err := http.Post(ts.URL, "application/json", strings.NewReader(body))
		is.NoErr(err)
		resp.Body.Close()
		return resp
	}
	is.Equal(post(postBody("1", "2")).StatusCode, http.StatusOK)
	is.Equal(post(postBody("\xff\x00")).StatusCode, http.StatusOK) // a position of any bytes, base64 in JSON
	is.Equal(post(postBody("2")).StatusCode, http.StatusOK)        // again
	is.Equal(post(postBody()).StatusCode, http.StatusOK)
	is.Equal(post(`{"position":"MQ=="}`).StatusCode, http.StatusBadRequest) // not an array
	resp, err := http.Get(ts.URL)
	is.NoErr(err)
	resp.Body.Close()
	is.Equal(resp.StatusCode, http.StatusMethodNotAllowed)

	got := srv.stats()
	is.Equal(got, sinkStats{requests: 5, accepted: 4, malformed: 1, maxInFlight: 1, records: 4, distinct: 3})
	is.Equal(got.duplicates(), int64(1))
	is.Equal(srv.positions, map[string]int{"1": 1, "2": 2, "\xff\x00": 1})
}

// With a limit of two, of five requests sent together two are in flight
// and three are refused at once with 429 and Retry-After: 0, whatever
// order they come in; the two held ones, abandoned by their client, are
// not accepted, and no position of any of them is counted.
func TestSinkServerRefusesRequestsBeyondItsLimit(t *testing.T) {
	is := is.New(t)
	srv := newSinkServer(time.Hour, 2, 0) // the admitted ones stay in flight until abandoned
	ts := httptest.NewServer(srv)
	ctx, abandon := context.WithCancel(t.Context())
	type answer struct {
		status     int
		retryAfter string
	}
	answers := make(chan answer, 5)
	for i := range 5 {
		go func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL, strings.NewReader(postBody(string(rune('a'+i)))))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return // abandoned
			}
			resp.Body.Close()
			answers <- answer{resp.StatusCode, resp.Header.Get("Retry-After")}
		}()
	}
	for range 3 {
		is.Equal(<-answers, answer{http.StatusTooManyRequests, "0"}) // a refusal, not an answer after the latency
	}
	got := srv.stats()
	is.Equal(got.requests, int64(5))
	is.Equal(got.refused, int64(3))
	is.Equal(got.maxInFlight, 2)

	abandon()
	ts.Close() // once the held requests have ended
	got = srv.stats()
	is.Equal(got, sinkStats{requests: 5, refused: 3, maxInFlight: 2})
	is.Equal(got.refusedShare(), 0.6)
	is.Equal(len(srv.positions), 0)
	is.Equal(srv.inFlight, 0)
}

// With two workers and no limit, of five requests sent together two are
// served at once and three wait their turn, none refused: answered in the
// order they came, at 20, 20, 40, 40 and 60 ms. A queued request whose
// client gives up leaves the queue unserved.
func TestSinkServerQueuesRequestsBeyondItsWorkers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		srv := newSinkServer(20*time.Millisecond, 0, 2)
		start := time.Now()
		type answer struct {
			request int
			status  int
			after   time.Duration
		}
		answers := make(chan answer, 5)
		for i := range 5 {
			go func() {
				w := httptest.NewRecorder()
				srv.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/records", strings.NewReader(postBody(string(rune('a'+i))))))
				answers <- answer{i, w.Code, time.Since(start)}
			}()
			synctest.Wait() // each in the queue before the next comes
		}
		is.Equal(srv.stats().maxInFlight, 5) // two served, three queued
		for i, after := range []time.Duration{20, 20, 40, 40, 60} {
			a := <-answers
			is.Equal(a.status, http.StatusOK)
			is.Equal(a.after, after*time.Millisecond)
			is.Equal(a.request/2, i/2) // a and b first, then c and d, then e
		}
		got := srv.stats()
		is.Equal(got, sinkStats{requests: 5, accepted: 5, maxInFlight: 5, records: 5, distinct: 5})

		// Both workers busy, a third request queued and given up.
		ctx, giveUp := context.WithCancel(t.Context())
		for _, p := range []string{"f", "g"} {
			go srv.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/records", strings.NewReader(postBody(p))))
		}
		done := make(chan int)
		go func() {
			w := httptest.NewRecorder()
			srv.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/records", strings.NewReader(postBody("h"))).WithContext(ctx))
			done <- len(srv.workers)
		}()
		synctest.Wait()
		giveUp()
		is.Equal(<-done, 2) // it left without a worker
		time.Sleep(20 * time.Millisecond)
		synctest.Wait()
		is.Equal(srv.stats().accepted, int64(7))
		is.Equal(srv.positions["h"], 0)
		is.Equal(srv.inFlight, 0)
	})
}
