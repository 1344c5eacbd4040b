package quietconn

import (
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"
)

type conn struct {
	net.Conn
	raw syscall.RawConn
}

func wrap(c net.Conn) net.Conn {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return c
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return c
	}
	return &conn{Conn: c, raw: raw}
}

func (c *conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var errno syscall.Errno
	err := c.raw.Read(func(fd uintptr) bool {
		n, errno = rawIO(syscall.SYS_READ, fd, p)
		return errno != syscall.EAGAIN
	})
	switch {
	case err != nil:
		return 0, c.opError("read", err)
	case errno != 0:
		return 0, c.opError("read", os.NewSyscallError("read", errno))
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

func (c *conn) Write(p []byte) (int, error) {
	written := 0
	var errno syscall.Errno
	err := c.raw.Write(func(fd uintptr) bool {
		for written < len(p) {
			var n int
			n, errno = rawIO(syscall.SYS_WRITE, fd, p[written:])
			if errno != 0 {
				return errno != syscall.EAGAIN
			}
			written += n
		}
		return true
	})
	switch {
	case err != nil:
		return written, c.opError("write", err)
	case errno != 0:
		return written, c.opError("write", os.NewSyscallError("write", errno))
	}
	return written, nil
}

// rawIO reads or writes p on fd, retrying a call an interrupt cut short.
func rawIO(call uintptr, fd uintptr, p []byte) (int, syscall.Errno) {
	for {
		n, _, errno := syscall.RawSyscall(call, fd, uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)))
		if errno != syscall.EINTR {
			return int(n), errno
		}
	}
}

// opError is err as the net package reports a failed read or write, so
// that callers that look for a timeout or a closed connection find it.
func (c *conn) opError(op string, err error) error {
	if oe, ok := err.(*net.OpError); ok {
		err = oe.Err // the raw call's wrapping
	}
	return &net.OpError{Op: op, Net: c.LocalAddr().Network(), Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}
