package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// sinkServer is the endpoint httpMode measures the http destination
// against, a remote service bound by latency: it answers each POST of a
// JSON array of OpenCDC JSON records with 200 after a fixed latency, and
// keeps account of the positions of the records it accepted, so that a
// cell can check that each arrived once. With a limit above 0, it refuses
// a request that would make more than limit requests in flight together at
// once with 429 and Retry-After: 0 (see ServeHTTP). With workers above 0,
// it serves that many requests together, each for the latency, and a
// request beyond them waits in a queue, first come first served, for a
// worker to be free: more in flight only wait longer.
type sinkServer struct {
	latency time.Duration
	slowing time.Duration // more latency for each request in flight
	limit   int
	workers chan struct{} // a token for each busy worker; nil: any number

	mu        sync.Mutex
	inFlight  int
	counts    sinkStats
	positions map[string]int // times each position came in an accepted request
}

// sinkStats is what a sinkServer counted.
type sinkStats struct {
	requests    int64 // POSTs
	accepted    int64 // answered 200: their records are accepted
	refused     int64 // answered 429, at once: too many requests in flight
	malformed   int64 // answered 400: the body was not a JSON array of records
	maxInFlight int   // the most requests in flight together, queued or served (refused ones never are)
	records     int64 // records in the accepted requests
	distinct    int64 // distinct positions among them
}

// duplicates returns how many accepted records had a position accepted
// before.
func (s sinkStats) duplicates() int64 { return s.records - s.distinct }

// refusedShare returns the share of the requests refused, 0 without any.
func (s sinkStats) refusedShare() float64 {
	if s.requests == 0 {
		return 0
	}
	return float64(s.refused) / float64(s.requests)
}

// newSinkServer returns a server answering after latency, refusing beyond
// limit requests in flight (0: never) and queueing beyond workers (0:
// serving any number together).
func newSinkServer(latency time.Duration, limit, workers int) *sinkServer {
	s := &sinkServer{latency: latency, limit: limit, positions: map[string]int{}}
	if workers > 0 {
		s.workers = make(chan struct{}, workers)
	}
	return s
}

// ServeHTTP takes a POST in if the limit leaves room, reads the positions
// of its records, and answers 200 once a worker has served it for the
// latency, the records then accepted; a request whose client gives up
// first is not. It refuses
// a request beyond the limit at once, without reading it, with 429 and
// Retry-After: 0. The header counts in whole seconds, and 1 would hold
// each refused batch for 50 times a 20 ms latency, measuring the wait
// rather than the push-back; 0 leaves the wait to the destination's own
// backoff (sdk.retry.delay, from 100 ms), which is what a client that
// respects the header does anyway.
func (s *sinkServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "POST a JSON array of records", http.StatusMethodNotAllowed)
		return
	}
	if !s.admit() {
		w.Header().Set("Retry-After", "0")
		http.Error(w, fmt.Sprintf("more than %d requests in flight", s.limit), http.StatusTooManyRequests)
		return
	}
	var records []struct {
		Position []byte `json:"position"` // base64 in OpenCDC JSON, which encoding/json decodes
	}
	err := json.NewDecoder(r.Body).Decode(&records)
	// Read to its end, the body lets the server notice a client that gives
	// up, and ends the request's context.
	_, _ = io.Copy(io.Discard, r.Body)
	if err != nil {
		s.end(malformed, nil)
		http.Error(w, "not a JSON array of OpenCDC JSON records: "+err.Error(), http.StatusBadRequest)
		return
	}
	positions := make([]string, len(records))
	for i, rec := range records {
		positions[i] = string(rec.Position)
	}
	if !s.work(r.Context(), s.latency+s.slowing*time.Duration(s.flying())) {
		s.end(abandoned, nil)
		return
	}
	// Settled, and the worker free, before the answer is written, so that
	// a client that sends its next request on receiving it finds the room
	// this one left.
	s.end(accepted, positions)
	w.WriteHeader(http.StatusOK)
}

// work serves a request for latency, first waiting in the queue for a
// worker if the server has a number of them; it returns false if ctx, the
// request's, ends first.
func (s *sinkServer) work(ctx context.Context, latency time.Duration) bool {
	if s.workers != nil {
		select {
		case s.workers <- struct{}{}: // a channel's waiting senders go in the order they came
			defer func() { <-s.workers }()
		case <-ctx.Done():
			return false
		}
	}
	wait := time.NewTimer(latency)
	defer wait.Stop()
	select {
	case <-wait.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// flying returns how many requests are in flight, this one among them.
func (s *sinkServer) flying() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inFlight
}

// admit counts a request in, and says whether it may be in flight: not if
// that would make more than the limit.
func (s *sinkServer) admit() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts.requests++
	if s.limit > 0 && s.inFlight >= s.limit {
		s.counts.refused++
		return false
	}
	s.inFlight++
	s.counts.maxInFlight = max(s.counts.maxInFlight, s.inFlight)
	return true
}

// How an admitted request ended.
type ending int

const (
	accepted  ending = iota // answered 200: its records are accepted
	malformed               // answered 400: its body was not a JSON array of records
	abandoned               // its client gave up before it was served: nothing is accepted
)

// end ends an admitted request, as how says; positions are those of its
// records if it was accepted.
func (s *sinkServer) end(how ending, positions []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inFlight--
	switch how {
	case malformed:
		s.counts.malformed++
	case accepted:
		s.counts.accepted++
		for _, p := range positions {
			s.positions[p]++
			s.counts.records++
			if s.positions[p] == 1 {
				s.counts.distinct++
			}
		}
	}
}

// stats returns what the server has counted so far.
func (s *sinkServer) stats() sinkStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts
}
