package file

import (
	"bytes"
	"context"
	"fmt"
	"os"

	"github.com/connkit/connkit/sdk"
)

// Destination appends each record to a file as one line: the record's
// bytes in the pipeline's record format (Record.Bytes) and a newline, as
// the incumbent does. It leaves durability to the operating system, as the
// incumbent does: it does not sync.
type Destination struct {
	path string
	f    *os.File
	buf  bytes.Buffer
	// broken is why a torn line could not be cut off after a failed
	// write; every Write fails with it from then on.
	broken error
}

// NewDestination returns a destination; it opens the file in Open.
func NewDestination(cfg Config) (*Destination, error) {
	return &Destination{path: cfg.Path}, nil
}

// Open opens the file for appending, creating it if it does not exist.
func (d *Destination) Open(context.Context) error {
	f, err := os.OpenFile(d.path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o666)
	if err != nil {
		return fmt.Errorf(`parameter "path": %w`, err)
	}
	d.f = f
	return nil
}

// Write appends records in one write. If the file takes only part of
// them, the lines written whole are kept and counted, and the torn one is
// cut off, so that the records Conduit sends again follow whole lines.
func (d *Destination) Write(ctx context.Context, records []sdk.Record) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if d.broken != nil {
		return 0, d.broken
	}
	d.buf.Reset()
	ends := make([]int, len(records))
	for i, r := range records {
		d.buf.Write(r.Bytes())
		d.buf.WriteByte('\n')
		ends[i] = d.buf.Len()
	}
	written, err := d.f.Write(d.buf.Bytes())
	n := 0
	for n < len(ends) && ends[n] <= written {
		n++
	}
	whole := 0
	if n > 0 {
		whole = ends[n-1]
	}
	if err == nil {
		return n, nil
	}
	err = fmt.Errorf("write %s: %w", d.path, err)
	if written > whole {
		if cerr := d.cut(written - whole); cerr != nil {
			d.broken = fmt.Errorf("%s ends with a torn line that could not be cut off (%w): reopen the destination", d.path, cerr)
			return n, fmt.Errorf("%w; %w", err, d.broken)
		}
	}
	return n, err
}

// cut takes the last n bytes off the file: appended last, they are ours.
func (d *Destination) cut(n int) error {
	info, err := d.f.Stat()
	if err != nil {
		return err
	}
	return d.f.Truncate(info.Size() - int64(n))
}

// Teardown closes the file.
func (d *Destination) Teardown(context.Context) error {
	if d.f == nil {
		return nil
	}
	return d.f.Close()
}
