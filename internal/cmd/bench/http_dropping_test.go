package main

import (
	"context"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"
)

// Under load the dropping server's backlog fills and the kernel drops
// SYNs: of 20 clients connecting together to 4 workers that take 200 ms a
// request behind a backlog of 5, ten find room at once and the others
// connect only when their SYN is sent again, a second later. Every one is
// answered, in HTTP/1.0 with its connection closed, on a connection of
// its own, and the kernel counts the drops as listen overflows. (A real
// kernel and real time: about 1.5 s.)
func TestDroppingServerDropsConnectionsUnderLoad(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("dropped SYNs and their 1 s retransmission are Linux's")
	}
	is := is.New(t)
	srv := newSinkServer(200*time.Millisecond, 0, 0)
	d, err := serveDropping(srv, 4, 5)
	is.NoErr(err)
	defer d.close()

	overflows, read := listenOverflows()
	const clients = 20
	type answer struct {
		connect time.Duration
		status  int
		proto   string
		close   bool
		err     error
	}
	answers := make(chan answer, clients)
	for i := range clients {
		go func() {
			var connect atomic.Int64
			dialer := &net.Dialer{Timeout: 5 * time.Second}
			tr := &http.Transport{DisableKeepAlives: true, DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				began := time.Now()
				conn, err := dialer.DialContext(ctx, network, addr)
				connect.Store(int64(time.Since(began)))
				return conn, err
			}}
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
			resp, err := client.Post(d.url(), "application/json", strings.NewReader(postBody(strconv.Itoa(i))))
			if err != nil {
				answers <- answer{err: err}
				return
			}
			resp.Body.Close()
			answers <- answer{time.Duration(connect.Load()), resp.StatusCode, resp.Proto, resp.Close, nil}
		}()
	}
	var slow int
	for range clients {
		a := <-answers
		is.NoErr(a.err)
		is.Equal(a.status, http.StatusOK)
		is.Equal(a.proto, "HTTP/1.0")
		is.True(a.close) // Connection: close
		if a.connect > 900*time.Millisecond {
			slow++
		}
	}
	t.Logf("%d of %d clients connected after a second or more", slow, clients)
	is.True(slow > 0) // some SYNs were dropped and sent again
	if after, ok := listenOverflows(); read && ok {
		is.True(after > overflows) // the kernel counted them
	}
	is.Equal(d.connections(), int64(clients))
	got := srv.stats()
	is.Equal(got.accepted, int64(clients))
	is.Equal(got.distinct, int64(clients))
	is.True(got.maxInFlight <= 4) // the workers are the only concurrency
}

// A request still served when the close's grace period is over is ended,
// left unanswered and not accepted; the close returns once it has ended.
func TestDroppingServerCloseEndsWhatIsLeft(t *testing.T) {
	is := is.New(t)
	srv := newSinkServer(time.Hour, 0, 0)
	d, err := serveDropping(srv, 1, 5)
	is.NoErr(err)
	failed := make(chan error, 1)
	go func() {
		client := &http.Client{Timeout: 10 * time.Second}
		_, err := client.Post(d.url(), "application/json", strings.NewReader(postBody("a")))
		failed <- err
	}()
	for deadline := time.Now().Add(10 * time.Second); srv.stats().requests == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no request came in 10 s")
		}
	}
	d.grace = 0
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		d.close()
	}()
	is.True(<-failed != nil) // no answer
	<-closed
	is.Equal(srv.stats(), sinkStats{requests: 1, maxInFlight: 1})
}

// The threaded server serves every connection on a goroutine of its own,
// but each request holds its interpreter lock, which its accepting loop
// needs too: 20 clients connecting together, each request holding the
// lock 100 ms, behind a backlog of 5, overflow its backlog, and every
// one is answered in the end. (Real time: about 3 s.)
func TestThreadedServerCollapsesUnderItsLock(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("dropped SYNs and their 1 s retransmission are Linux's")
	}
	is := is.New(t)
	srv := newSinkServer(10*time.Millisecond, 0, 0)
	d, err := serveThreaded(srv, 5, 100*time.Millisecond)
	is.NoErr(err)
	defer d.close()
	overflows, read := listenOverflows()
	const clients = 20
	errs := make(chan error, clients)
	for i := range clients {
		go func() {
			resp, err := (&http.Client{Timeout: 20 * time.Second}).Post(d.url(), "application/json", strings.NewReader(postBody(strconv.Itoa(i))))
			if err == nil {
				resp.Body.Close()
			}
			errs <- err
		}()
	}
	for range clients {
		is.NoErr(<-errs)
	}
	if after, ok := listenOverflows(); read && ok {
		t.Logf("%d listen overflows", after-overflows)
		is.True(after > overflows) // the kernel dropped some
	}
	is.Equal(srv.stats().distinct, int64(clients))
	is.Equal(d.connections(), int64(clients))
}

// The slowing server answers after its latency and more for each request
// in flight when one came.
func TestSlowingServerSlowsWithRequestsInFlight(t *testing.T) {
	is := is.New(t)
	srv := newSinkServer(20*time.Millisecond, 0, 0)
	srv.slowing = 50 * time.Millisecond
	url, closeServer, err := serveLoopback(srv)
	is.NoErr(err)
	defer closeServer()
	took := make(chan time.Duration, 4)
	for i := range 4 {
		go func() {
			began := time.Now()
			resp, err := http.Post(url, "application/json", strings.NewReader(postBody(strconv.Itoa(i))))
			is.NoErr(err)
			resp.Body.Close()
			took <- time.Since(began)
		}()
		time.Sleep(10 * time.Millisecond) // one after the other
	}
	var longest time.Duration
	for range 4 {
		longest = max(longest, <-took)
	}
	is.True(longest >= 20*time.Millisecond+4*50*time.Millisecond) // the last came with four in flight
}
