package file

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
)

// tail reads the whole lines of a file that may not exist yet and may
// grow, from an offset on. It holds no goroutine: a caller that finds no
// line asks again later.
type tail struct {
	path   string
	f      *os.File
	lines  *bufio.Scanner // f's lines from offset on
	offset int64          // where the next line starts
	limit  int            // the longest line, in bytes, newline aside
}

// open opens the file at the offset, unless it is open; ok is false if it
// does not exist.
func (t *tail) open() (ok bool, err error) {
	if t.f != nil {
		return true, nil
	}
	f, err := os.Open(t.path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := t.readFrom(f); err != nil {
		f.Close()
		return false, err
	}
	return true, nil
}

// readFrom reads f's lines from the offset on.
func (t *tail) readFrom(f *os.File) error {
	if _, err := f.Seek(t.offset, io.SeekStart); err != nil {
		return err
	}
	t.f, t.lines = f, lines(f, t.limit)
	return nil
}

// next returns the next whole line without its newline; ok is false when
// there is none yet: the file does not exist, or ends without a newline.
// The line is valid until the next call.
func (t *tail) next() (line []byte, ok bool, err error) {
	if ok, err := t.open(); !ok {
		return nil, false, err
	}
	if !t.lines.Scan() {
		switch err := t.lines.Err(); {
		case errors.Is(err, bufio.ErrTooLong):
			return nil, false, fmt.Errorf("%s: the line at offset %d exceeds the limit of %d bytes, the plugin's record size limit", t.path, t.offset, t.limit)
		case err != nil:
			return nil, false, err
		}
		return nil, false, t.rewind()
	}
	b := t.lines.Bytes()
	t.offset += int64(len(b))
	return b[:len(b)-1], true, nil
}

// rewind goes back to the start of the line not yet read whole, to read it
// again once it is, and fails if the file has become shorter than what was
// read: lines were taken away, and which are new cannot be told.
func (t *tail) rewind() error {
	info, err := t.f.Stat()
	if err != nil {
		return err
	}
	if info.Size() < t.offset {
		return fmt.Errorf("%s is %d bytes long, shorter than the %d bytes read: was it truncated? Start the source from the beginning (a new connector) to read it again", t.path, info.Size(), t.offset)
	}
	return t.readFrom(t.f)
}

// close closes the file, if it was opened.
func (t *tail) close() error {
	if t.f == nil {
		return nil
	}
	return t.f.Close()
}

// lines returns a scanner of r's whole lines, each with its newline. A
// line whose length, newline aside, exceeds limit stops it with
// bufio.ErrTooLong, found as soon as more than limit bytes of it are
// read. What follows the last newline is no line: the scanner stops
// there, without an error.
func lines(r io.Reader, limit int) *bufio.Scanner {
	s := bufio.NewScanner(r)
	s.Buffer(nil, min(limit, math.MaxInt-1)+1) // a line and its newline
	s.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			return i + 1, data[:i+1], nil
		}
		return 0, nil, nil
	})
	return s
}
