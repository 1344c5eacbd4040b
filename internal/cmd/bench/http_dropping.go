package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// droppingServer serves a handler as an overloaded HTTP/1.0 server does:
// a few workers accept connections one at a time, and each reads one
// request, answers it in HTTP/1.0 and closes the connection, so that every
// request comes on a connection of its own. Its listen backlog is small:
// once the workers are busy and the backlog is full, the kernel drops the
// SYN of a new connection, and the client sends it again only after its
// retransmission timeout (on Linux 1 s, then 3 s, 7 s, ...). net/http's
// server would not do: it accepts as fast as connections come, so its
// backlog never fills.
type droppingServer struct {
	ln net.Listener
	h  http.Handler
	// threaded: one accepting loop, each connection served on a
	// goroutine of its own, as a server with a thread for each does, its
	// threads sharing one interpreter lock (see serveThreaded).
	threaded bool
	interp   sync.Mutex
	holds    time.Duration   // how long a request holds the lock
	ctx      context.Context // ends with the server: the requests still served, and their connections
	cancel   context.CancelFunc
	workers  sync.WaitGroup
	accepted atomic.Int64  // connections
	grace    time.Duration // how long close waits for the requests being served
}

// serveDropping serves h on a loopback port the kernel picks, with a listen
// backlog of backlog connections and workers workers.
func serveDropping(h http.Handler, workers, backlog int) (*droppingServer, error) {
	ln, err := listenBacklog(backlog)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	d := &droppingServer{ln: ln, h: h, ctx: ctx, cancel: cancel, grace: 10 * time.Second}
	for range workers {
		d.workers.Go(d.work)
	}
	return d, nil
}

// serveThreaded serves h on a loopback port the kernel picks as a server
// with a thread for each connection in an interpreter with a global lock
// does: one loop accepts connections, each served on a goroutine of its
// own, behind a listen backlog of backlog connections. Each request
// holds the lock for holds, and the loop takes it for each accept (a
// tenth of that). While the requests leave the lock free often enough,
// it keeps up; once they hold it most of the time, the loop waits to
// accept, the backlog fills, the kernel drops SYNs and clients wait a
// second to send theirs again: it collapses.
func serveThreaded(h http.Handler, backlog int, holds time.Duration) (*droppingServer, error) {
	d, err := serveDropping(h, 0, backlog)
	if err != nil {
		return nil, err
	}
	d.threaded, d.holds = true, holds
	d.workers.Go(d.work)
	return d, nil
}

// interpret holds the interpreter lock for d.
func (d *droppingServer) interpret(dur time.Duration) {
	d.interp.Lock()
	defer d.interp.Unlock()
	time.Sleep(dur)
}

// url is where the server takes records.
func (d *droppingServer) url() string { return "http://" + d.ln.Addr().String() + "/records" }

// connections returns how many connections the server has accepted.
func (d *droppingServer) connections() int64 { return d.accepted.Load() }

// close stops accepting connections, and returns once every request has
// been answered, or after the grace period (10 s), when it ends what is
// left unanswered. Connections still in the backlog are reset.
func (d *droppingServer) close() {
	_ = d.ln.Close()
	done := make(chan struct{})
	go func() {
		d.workers.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(d.grace):
	}
	d.cancel()
	<-done
}

// work accepts a connection and serves it, one at a time, until the
// listener is closed.
func (d *droppingServer) work() {
	for {
		conn, err := d.ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil { // out of file descriptors, say: a pause, as net/http takes
			time.Sleep(10 * time.Millisecond)
			continue
		}
		d.accepted.Add(1)
		if !d.threaded {
			d.serve(conn)
			continue
		}
		d.interpret(d.holds / 10)
		d.workers.Go(func() {
			d.interpret(d.holds)
			d.serve(conn)
		})
	}
}

// serve reads one request from conn, has the handler answer it, writes
// the answer in HTTP/1.0 and closes conn. A request whose client goes away
// before its answer, or that the server's close ends, is left unanswered,
// its context ended, as net/http's server does.
func (d *droppingServer) serve(conn net.Conn) {
	defer conn.Close()
	// The server's end, or a client that stalls for a minute, ends every
	// read and write on conn.
	_ = conn.SetDeadline(time.Now().Add(time.Minute))
	defer context.AfterFunc(d.ctx, func() { _ = conn.SetDeadline(time.Now()) })()
	req, err := http.ReadRequest(bufio.NewReader(conn))
	if err != nil {
		return
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	ctx, cancel := context.WithCancel(d.ctx)
	defer cancel()
	// A client whose request came whole sends nothing more: a read that
	// ends, before conn is closed, means it went away.
	go func() {
		_, _ = conn.Read(make([]byte, 1))
		cancel()
	}()
	answer := httptest.NewRecorder()
	d.h.ServeHTTP(answer, req.WithContext(ctx))
	if ctx.Err() != nil {
		return
	}
	resp := answer.Result()
	resp.Proto, resp.ProtoMajor, resp.ProtoMinor = "HTTP/1.0", 1, 0
	resp.ContentLength = int64(answer.Body.Len())
	resp.Close = true // Connection: close
	_ = resp.Write(conn)
}

// listenBacklog listens on a loopback port the kernel picks with a listen
// backlog of backlog connections. net.Listen takes the kernel's largest
// (net.core.somaxconn) and lets no one choose.
func listenBacklog(backlog int) (net.Listener, error) {
	// As package net does, so that no process started meanwhile inherits
	// the socket.
	syscall.ForkLock.RLock()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, syscall.IPPROTO_TCP)
	if err == nil {
		syscall.CloseOnExec(fd)
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	f := os.NewFile(uintptr(fd), "listener")
	defer f.Close() // the listener holds a duplicate
	if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1); err != nil {
		return nil, os.NewSyscallError("setsockopt", err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return nil, os.NewSyscallError("bind", err)
	}
	if err := syscall.Listen(fd, backlog); err != nil {
		return nil, os.NewSyscallError("listen", err)
	}
	return net.FileListener(f)
}
