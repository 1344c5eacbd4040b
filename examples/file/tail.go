package file

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
)

// tail reads the whole lines of a file that may not exist yet and may
// grow, from an offset on. It holds no goroutine: a caller that finds no
// line asks again later.
type tail struct {
	path   string
	f      *os.File
	r      *bufio.Reader
	offset int64 // where the next line starts
	limit  int   // the longest line, in bytes, newline aside
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
	if _, err := f.Seek(t.offset, io.SeekStart); err != nil {
		f.Close()
		return false, err
	}
	t.f, t.r = f, bufio.NewReaderSize(f, 64<<10)
	return true, nil
}

// next returns the next whole line without its newline; ok is false when
// there is none yet: the file does not exist, or ends without a newline.
// The line is valid until the next call.
func (t *tail) next() (line []byte, ok bool, err error) {
	if ok, err := t.open(); !ok {
		return nil, false, err
	}
	b, err := readLine(t.r, t.limit)
	switch {
	case errors.Is(err, errLineTooLong):
		return nil, false, fmt.Errorf("%s: the line at offset %d exceeds the limit of %d bytes, the plugin's record size limit", t.path, t.offset, t.limit)
	case errors.Is(err, io.EOF):
		return nil, false, t.rewind()
	case err != nil:
		return nil, false, err
	}
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
	if _, err := t.f.Seek(t.offset, io.SeekStart); err != nil {
		return err
	}
	t.r.Reset(t.f)
	return nil
}

// close closes the file, if it was opened.
func (t *tail) close() error {
	if t.f == nil {
		return nil
	}
	return t.f.Close()
}

var errLineTooLong = errors.New("line too long")

// readLine returns the next line with its newline, or what there is of it
// with io.EOF when the file ends first. A line whose length, newline
// aside, exceeds limit is errLineTooLong, found as soon as more than limit
// bytes of it are read. The line is valid until the next read from r.
func readLine(r *bufio.Reader, limit int) ([]byte, error) {
	var long []byte // the line so far, once it outgrows r's buffer
	for {
		b, err := r.ReadSlice('\n')
		if long != nil || errors.Is(err, bufio.ErrBufferFull) {
			long = append(long, b...) // copied before r reads again
			b = long
		}
		n := len(b)
		if err == nil {
			n-- // the newline
		}
		if n > limit {
			return nil, errLineTooLong
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return b, err
		}
	}
}
