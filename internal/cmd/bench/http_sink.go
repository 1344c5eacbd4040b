package main

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// sink is a kind of server httpMode measures the http destination against:
// each a sinkServer answering a request after the latency, which differ in
// what they do with more requests than they serve together.
type sink string

const (
	sinkPlain    sink = "plain"    // serves any number together
	sinkLimit    sink = "limit"    // refuses with 429 beyond -max-concurrent in flight
	sinkQueueing sink = "queueing" // serves -workers together; the others wait in a queue
	sinkDropping sink = "dropping" // HTTP/1.0 behind a short listen backlog, -workers accepting: the kernel drops SYNs
	sinkThreaded sink = "threaded" // HTTP/1.0, a thread for each connection behind a short listen backlog: collapses past a number of connections
	sinkSlowing  sink = "slowing"  // answers after the latency and -slowing more for each request in flight
)

// sinks are the kinds of server, in the order a run measures them.
var sinks = []sink{sinkPlain, sinkLimit, sinkQueueing, sinkDropping, sinkThreaded, sinkSlowing}

// parseSinks reads -sinks, comma-separated kinds of server, into the
// order a run measures them.
func parseSinks(s string) ([]sink, error) {
	var got []sink
	for name := range strings.SplitSeq(s, ",") {
		k := sink(strings.TrimSpace(name))
		if !slices.Contains(sinks, k) {
			return nil, fmt.Errorf("-sinks: got %q, expected plain, limit, queueing, dropping, threaded or slowing", name)
		}
		got = append(got, k)
	}
	return slices.DeleteFunc(slices.Clone(sinks), func(k sink) bool { return !slices.Contains(got, k) }), nil
}

// concurrencies returns the sdk.write.concurrency settings a run measures
// against k, in the order they alternate: -concurrencies, but auto alone
// against the one that refuses when -max-concurrent is 0.
func (set httpSetup) concurrencies(k sink) []string {
	if k == sinkLimit && set.maxConcurrent == 0 {
		return nil
	}
	return set.settings
}

// serve starts a server of kind k on loopback: srv keeps its counts, url
// is where it takes records, and closeServer returns once every request
// has been answered, or after 10 s, when it ends what is left.
func (set httpSetup) serve(k sink) (srv *sinkServer, url string, closeServer func(), err error) {
	var limit, workers int
	switch k {
	case sinkLimit:
		limit = set.maxConcurrent
	case sinkQueueing:
		workers = set.workers
	}
	srv = newSinkServer(set.latency, limit, workers)
	var d *droppingServer
	switch k {
	case sinkDropping:
		d, err = serveDropping(srv, set.workers, set.backlog)
	case sinkThreaded:
		d, err = serveThreaded(srv, set.backlog, set.threadHolds)
	default:
		if k == sinkSlowing {
			srv.slowing = set.slowing
		}
		url, closeServer, err = serveLoopback(srv)
		return srv, url, closeServer, err
	}
	if err != nil {
		return nil, "", nil, err
	}
	return srv, d.url(), d.close, nil
}

// describe says in the report what a server of kind k does.
func (set httpSetup) describe(k sink) string {
	switch k {
	case sinkPlain:
		return fmt.Sprintf("**plain**: a server that answers each request with 200 after %v, any number of them in flight together.", set.latency)
	case sinkLimit:
		return fmt.Sprintf("**limit**: the plain server, refusing with 429 and Retry-After: 0 a request that would make more than %d in flight; × 1 is over the plain server's row with concurrency 1.", set.maxConcurrent)
	case sinkQueueing:
		return fmt.Sprintf("**queueing**: a server of %d workers, each serving a request for %v; a request beyond them waits in a queue, first come first served, and is never refused: more in flight only wait longer. Max in flight counts the queued requests with the served ones.", set.workers, set.latency)
	case sinkThreaded:
		return fmt.Sprintf("**threaded**: a server that answers in HTTP/1.0 and closes each connection after its answer, with a thread for each connection in an interpreter with a global lock: one loop accepts connections, behind a listen backlog of %d, and serves each on a thread of its own for %v, of which the request holds the lock %v (an accept a tenth of that). Past about %d requests in flight together the lock is rarely free, the loop waits to accept, the backlog fills, the kernel drops SYNs and a client waits 1 s to send its SYN again: it collapses.", set.backlog, set.latency, set.threadHolds, int(float64(set.latency+set.threadHolds)/float64(set.threadHolds)))
	case sinkSlowing:
		return fmt.Sprintf("**slowing**: a server that answers each request after %v and %v more for each request in flight when it came: more in flight bring more records a second, ever less so, and each waits longer.", set.latency, set.slowing)
	default:
		return fmt.Sprintf("**dropping**: a server that answers in HTTP/1.0 and closes each connection after its answer, so that every request comes on a connection of its own; %d workers accept connections one at a time and serve each for %v, behind a listen backlog of %d. Under load the kernel drops SYNs, and a client connects only when it sends its SYN again, 1 s later (then 3 s, 7 s). Listen overflows is the kernel's TcpExt ListenOverflows over the cell's run, from before Conduit's start to after its exit: the SYNs (and handshakes) dropped for a full backlog, counted for the whole machine, not for the cell's server alone.", set.workers, set.latency, set.backlog)
	}
}

// listenOverflows returns the kernel's count of connections dropped for a
// full listen backlog, TcpExt ListenOverflows in /proc/net/netstat, of
// the network namespace; false if there is none to read.
func listenOverflows() (int64, bool) {
	b, err := os.ReadFile("/proc/net/netstat")
	if err != nil {
		return 0, false
	}
	// A line of names, then a line of values, each after "TcpExt:".
	lines := strings.Split(string(b), "\n")
	for i := 0; i+1 < len(lines); i++ {
		names, ok := strings.CutPrefix(lines[i], "TcpExt:")
		values, ok2 := strings.CutPrefix(lines[i+1], "TcpExt:")
		if !ok || !ok2 {
			continue
		}
		vs := strings.Fields(values)
		for j, name := range strings.Fields(names) {
			if name == "ListenOverflows" && j < len(vs) {
				v, err := strconv.ParseInt(vs[j], 10, 64)
				return v, err == nil
			}
		}
	}
	return 0, false
}

// parseConcurrencies reads -concurrencies: sdk.write.concurrency settings,
// numbers of at least 1 and auto, each once.
func parseConcurrencies(s string) ([]string, error) {
	var got []string
	for c := range strings.SplitSeq(s, ",") {
		c = strings.TrimSpace(c)
		if n, err := strconv.Atoi(c); (err != nil || n < 1) && c != "auto" || slices.Contains(got, c) {
			return nil, fmt.Errorf("-concurrencies: got %q, expected numbers of at least 1 and auto, each once", c)
		}
		got = append(got, c)
	}
	return got, nil
}
