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

func TestReadWrite(t *testing.T) {
	for _, network := range []string{"tcp", "unix"} {
		t.Run(network, func(t *testing.T) {
			quiet, plain := pair(t, network)
			// More than a socket buffer holds, so that writes wait for
			// the reader and reads come in pieces.
			want := bytes.Repeat([]byte("0123456789abcdef"), 1<<19)
			errs := make(chan error, 1)
			go func() {
				_, err := quiet.Write(want)
				errs <- err
			}()
			got := make([]byte, len(want))
			if _, err := io.ReadFull(plain, got); err != nil {
				t.Fatal(err)
			}
			if err := <-errs; err != nil {
				t.Fatalf("Write: %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatal("the quiet conn's bytes arrived changed")
			}
			go func() {
				_, err := plain.Write(want)
				errs <- err
			}()
			if _, err := io.ReadFull(quiet, got); err != nil {
				t.Fatalf("Read: %v", err)
			}
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatal("the quiet conn read bytes changed")
			}
			if n, err := quiet.Read(nil); n != 0 || err != nil {
				t.Fatalf("Read(nil) = %d, %v; want 0, nil", n, err)
			}
			plain.Close()
			if _, err := quiet.Read(got); err != io.EOF {
				t.Fatalf("Read after the peer closed: %v, want io.EOF", err)
			}
		})
	}
}

func TestErrorsAsNetReportsThem(t *testing.T) {
	quiet, plain := pair(t, "tcp")
	quiet.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
	_, err := quiet.Read(make([]byte, 1))
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Read past its deadline: %v, want a timeout", err)
	}
	var oe *net.OpError
	if !errors.As(err, &oe) || oe.Op != "read" || oe.Addr.String() != plain.LocalAddr().String() {
		t.Fatalf("Read past its deadline: %#v, want a read OpError naming the peer", err)
	}
	quiet.SetReadDeadline(time.Time{})

	// A reader waiting when the connection closes is woken with net.ErrClosed.
	errs := make(chan error, 1)
	go func() {
		_, err := quiet.Read(make([]byte, 1))
		errs <- err
	}()
	time.Sleep(10 * time.Millisecond)
	quiet.Close()
	if err := <-errs; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Read across Close: %v, want net.ErrClosed", err)
	}
	if _, err := quiet.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Write after Close: %v, want net.ErrClosed", err)
	}
}

func TestWriteToAResetPeer(t *testing.T) {
	quiet, plain := pair(t, "tcp")
	plain.(*net.TCPConn).SetLinger(0)
	plain.Close() // sends a reset
	var err error
	for i := 0; i < 100 && err == nil; i++ {
		_, err = quiet.Write([]byte("x"))
		time.Sleep(time.Millisecond)
	}
	if !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("Write to a reset peer: %v, want ECONNRESET or EPIPE", err)
	}
	var oe *net.OpError
	if !errors.As(err, &oe) || oe.Op != "write" {
		t.Fatalf("Write to a reset peer: %#v, want a write OpError", err)
	}
}

func TestNotASocket(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if Wrap(a) != a {
		t.Fatal("Wrap changed a connection that is not a socket")
	}
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
