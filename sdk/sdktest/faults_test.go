package sdktest_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"testing/synctest"
	"time"

	"github.com/connkit/connkit/internal/leakcheck"
	"github.com/connkit/connkit/sdk"
	"github.com/connkit/connkit/sdk/sdktest"
	"github.com/matryer/is"
)

// memory is a destination that keeps what it writes.
type memory struct{ written []sdk.Position }

func (m *memory) Open(context.Context) error     { return nil }
func (m *memory) Teardown(context.Context) error { return nil }
func (m *memory) Write(_ context.Context, records []sdk.Record) (int, error) {
	for _, r := range records {
		m.written = append(m.written, r.Position)
	}
	return len(records), nil
}

func records(from, n int) []sdk.Record {
	out := make([]sdk.Record, n)
	for i := range out {
		out[i] = sdktest.TestRecord(from+i, sdk.OperationCreate, true)
	}
	return out
}

var errBoom = errors.New("boom")

func TestFailAt(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	m := &memory{}
	d := sdktest.FailAt(m, 4, errBoom)

	n, err := d.Write(ctx, records(0, 3)) // records 0..2: before the failure
	is.NoErr(err)
	is.Equal(n, 3)
	n, err = d.Write(ctx, records(3, 3)) // records 3..5: record 4 fails
	is.Equal(err, errBoom)
	is.Equal(n, 1)                       // record 3 was written
	n, err = d.Write(ctx, records(4, 2)) // the retry goes through
	is.NoErr(err)
	is.Equal(n, 2)
	is.Equal(len(m.written), 6)
	is.Equal(string(m.written[4]), "sdktest-4")
}

func TestFailAtFirstRecordOfAWrite(t *testing.T) {
	is := is.New(t)
	m := &memory{}
	d := sdktest.FailAt(m, 0, errBoom)
	n, err := d.Write(context.Background(), records(0, 2))
	is.Equal(err, errBoom)
	is.Equal(n, 0)
	is.Equal(len(m.written), 0) // the destination saw nothing
}

func TestFailAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		ctx := context.Background()
		m := &memory{}
		d := sdktest.FailAfter(m, time.Second, errBoom)
		is.NoErr(d.Open(ctx))
		_, err := d.Write(ctx, records(0, 2))
		is.NoErr(err)
		time.Sleep(time.Second)
		n, err := d.Write(ctx, records(2, 2))
		is.Equal(err, errBoom)
		is.Equal(n, 0)
		is.Equal(len(m.written), 2)
	})
}

func TestProxyDrop(t *testing.T) {
	leakcheck.Check(t)
	is := is.New(t)
	echo := echoServer(t)
	p, err := sdktest.NewProxy(echo)
	is.NoErr(err)
	defer p.Close()

	conn, err := net.Dial("tcp", p.Addr())
	is.NoErr(err)
	defer conn.Close()
	r := bufio.NewReader(conn)
	fmt.Fprintln(conn, "hello")
	line, err := r.ReadString('\n')
	is.NoErr(err)
	is.Equal(line, "hello\n") // traffic passes

	p.Drop()
	_, err = r.ReadString('\n')
	is.Equal(err, io.EOF) // the connection broke

	again, err := net.Dial("tcp", p.Addr())
	is.NoErr(err)
	defer again.Close()
	fmt.Fprintln(again, "still there")
	line, err = bufio.NewReader(again).ReadString('\n')
	is.NoErr(err)
	is.Equal(line, "still there\n") // new connections work after a drop
}

func TestDropAt(t *testing.T) {
	is := is.New(t)
	drops := 0
	m := &memory{}
	d := sdktest.DropAt(m, 3, func() { drops++ })
	ctx := context.Background()
	_, _ = d.Write(ctx, records(0, 2))
	is.Equal(drops, 0)
	_, _ = d.Write(ctx, records(2, 2)) // reaches record 3
	is.Equal(drops, 1)
	_, _ = d.Write(ctx, records(4, 2))
	is.Equal(drops, 1) // once
}

// echoServer serves connections that echo what they receive.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); c.Close() }()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return ln.Addr().String()
}
