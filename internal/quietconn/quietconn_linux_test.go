package quietconn

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/connkit/connkit/internal/leakcheck"
	"github.com/matryer/is"
)

// pair returns two ends of a connection over network ("tcp" or "unix"),
// the first wrapped.
func pair(t testing.TB, network string) (quiet, plain net.Conn) {
	t.Helper()
	addr := "127.0.0.1:0"
	if network == "unix" {
		addr = filepath.Join(t.TempDir(), "s")
	}
	l, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := l.Accept()
		accepted <- c
	}()
	c, err := net.Dial(network, l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	other := <-accepted
	if other == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { c.Close(); other.Close() })
	quiet = Wrap(c)
	if _, ok := quiet.(*conn); !ok {
		t.Fatalf("Wrap(%T) = %T, want the quiet conn", c, quiet)
	}
	return quiet, other
}

// TestReadWrite: bytes go both ways unchanged, through writes that wait
// for the reader and reads that come in pieces, and the peer's close reads
// as io.EOF.
func TestReadWrite(t *testing.T) {
	for _, network := range []string{"tcp", "unix"} {
		t.Run(network, func(t *testing.T) {
			leakcheck.Check(t)
			is := is.New(t)
			quiet, plain := pair(t, network)
			want := bytes.Repeat([]byte("0123456789abcdef"), 1<<19) // more than a socket buffer holds
			got := make([]byte, len(want))
			errs := make(chan error, 1)
			go func() {
				_, err := quiet.Write(want)
				errs <- err
			}()
			_, err := io.ReadFull(plain, got)
			is.NoErr(err)
			is.NoErr(<-errs) // Write
			is.True(bytes.Equal(got, want))

			go func() {
				_, err := plain.Write(want)
				errs <- err
			}()
			_, err = io.ReadFull(quiet, got)
			is.NoErr(err) // Read
			is.NoErr(<-errs)
			is.True(bytes.Equal(got, want))

			n, err := quiet.Read(nil)
			is.Equal(n, 0)
			is.NoErr(err)
			plain.Close()
			_, err = quiet.Read(got)
			is.Equal(err, io.EOF)
		})
	}
}

// TestErrorsAsNetReportsThem: a deadline, a close and a reset come back as
// the net package's errors, so that callers asking for them find them.
func TestErrorsAsNetReportsThem(t *testing.T) {
	t.Run("deadline", func(t *testing.T) {
		is := is.New(t)
		quiet, plain := pair(t, "tcp")
		quiet.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
		_, err := quiet.Read(make([]byte, 1))
		var ne net.Error
		is.True(errors.As(err, &ne) && ne.Timeout())
		is.True(errors.Is(err, os.ErrDeadlineExceeded))
		var oe *net.OpError
		is.True(errors.As(err, &oe))
		is.Equal(oe.Op, "read")
		is.Equal(oe.Addr.String(), plain.LocalAddr().String())
	})
	t.Run("closed", func(t *testing.T) {
		leakcheck.Check(t)
		is := is.New(t)
		quiet, _ := pair(t, "tcp")
		errs := make(chan error, 1)
		go func() {
			_, err := quiet.Read(make([]byte, 1)) // ended by Close, or after it
			errs <- err
		}()
		quiet.Close()
		is.True(errors.Is(<-errs, net.ErrClosed))
		_, err := quiet.Write([]byte("x"))
		is.True(errors.Is(err, net.ErrClosed))
	})
	t.Run("reset", func(t *testing.T) {
		is := is.New(t)
		quiet, plain := pair(t, "tcp")
		is.NoErr(plain.(*net.TCPConn).SetLinger(0))
		plain.Close() // sends a reset, which loopback delivers before Close returns
		_, err := quiet.Write([]byte("x"))
		is.True(errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE))
		var oe *net.OpError
		is.True(errors.As(err, &oe))
		is.Equal(oe.Op, "write")
	})
}

// TestNotASocket: a connection without a file descriptor comes back as it is.
func TestNotASocket(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	is.New(t).Equal(Wrap(a), a)
}

// TestMain lets the test binary be the echo peer of BenchmarkRoundTrip.
func TestMain(m *testing.M) {
	if addr := os.Getenv("QUIETCONN_ECHO"); addr != "" {
		echo(addr)
		return
	}
	os.Exit(m.Run())
}

// echo connects to addr and writes back every line it reads.
func echo(addr string) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		os.Exit(1)
	}
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			os.Exit(0)
		}
		if _, err := c.Write(line); err != nil {
			os.Exit(0)
		}
	}
}

// BenchmarkRoundTrip sends a line to an echo peer in another process and
// waits for it back, as a plugin waits for Conduit and the database: the
// process is idle while the peer works. It reports the process's own
// processor time per round trip, on one thread as a plugin fed lone
// records runs.
func BenchmarkRoundTrip(b *testing.B) {
	for _, quiet := range []bool{false, true} {
		b.Run(map[bool]string{false: "plain", true: "quiet"}[quiet], func(b *testing.B) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			peer := exec.Command(os.Args[0])
			peer.Env = append(os.Environ(), "QUIETCONN_ECHO="+l.Addr().String())
			if err := peer.Start(); err != nil {
				b.Fatal(err)
			}
			defer peer.Wait()
			c, err := l.Accept()
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			if quiet {
				c = Wrap(c)
			}
			line := []byte("a line of about the size of a small record's message\n")
			got := make([]byte, len(line))
			start := cpu(b)
			for b.Loop() {
				if _, err := c.Write(line); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(c, got); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64((cpu(b)-start).Nanoseconds())/1e3/float64(b.N), "cpu-µs/op")
		})
	}
}

func cpu(b *testing.B) time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		b.Fatal(err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}
