package jsonl

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"

	"github.com/connkit/connkit/sdk"
)

// DestinationConfig is the destination's configuration.
type DestinationConfig struct {
	Path string `param:"path" validate:"required" desc:"The file to append records to; created if missing."`
	Sync bool   `param:"sync" default:"true" desc:"Sync the file to disk before acknowledging each Write; false leaves durability to the operating system."`
}

// Destination appends records to a file, one JSON line each.
type Destination struct {
	cfg  DestinationConfig
	f    *os.File
	size int64 // bytes of whole lines in the file
	buf  bytes.Buffer
	// broken is why the file could not be put back to its last whole
	// line after a failed Write; every Write fails with it from then on.
	broken error
}

// NewDestination returns a destination; it opens the file in Open.
func NewDestination(cfg DestinationConfig) (*Destination, error) {
	return &Destination{cfg: cfg}, nil
}

// Open opens the file for appending. A last line left incomplete by a
// crash is cut off: it was never acknowledged.
func (d *Destination) Open(context.Context) error {
	f, err := os.OpenFile(d.cfg.Path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	size, err := wholeLines(f)
	if err == nil {
		err = f.Truncate(size)
	}
	if err == nil {
		_, err = f.Seek(size, io.SeekStart)
	}
	if err != nil {
		f.Close()
		return fmt.Errorf("open %s: %w", d.cfg.Path, err)
	}
	d.f, d.size = f, size
	return nil
}

// wholeLines returns the length of f up to the end of its last complete
// line.
func wholeLines(f *os.File) (int64, error) {
	end, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return 0, err
	}
	buf := make([]byte, 4096)
	for pos := end; pos > 0; {
		n := min(int64(len(buf)), pos)
		pos -= n
		if _, err := f.ReadAt(buf[:n], pos); err != nil {
			return 0, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return pos + int64(i) + 1, nil
		}
	}
	return 0, nil
}

// cut truncates the file to size and appends from there. If it cannot,
// the destination is broken: what the file holds past its last known
// whole line is not known.
func (d *Destination) cut(size int64) error {
	err := d.f.Truncate(size)
	if err == nil {
		_, err = d.f.Seek(size, io.SeekStart)
	}
	if err != nil {
		d.broken = fmt.Errorf("%s is in an unknown state after a failed write (%w): reopen the destination", d.cfg.Path, err)
	}
	return err
}

// Write appends records and, with sync, syncs the file. If the file takes
// only part of them, the lines written whole are kept and counted, the
// torn one is cut off.
func (d *Destination) Write(ctx context.Context, records []sdk.Record) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if d.broken != nil {
		return 0, d.broken
	}
	d.buf.Reset()
	var encErr error
	for _, r := range records {
		b, err := encode(r)
		if err != nil {
			encErr = sdk.RecordFault(fmt.Errorf("record %q: %w", r.Position, err))
			break
		}
		d.buf.Write(b)
		d.buf.WriteByte('\n')
	}
	written, werr := d.f.Write(d.buf.Bytes())
	// Each record is one line: encode's JSON has no newline in it.
	done := d.buf.Bytes()[:written]
	n := bytes.Count(done, []byte{'\n'})         // the records written whole
	whole := bytes.LastIndexByte(done, '\n') + 1 // their bytes
	if written > whole {
		if err := d.cut(d.size + int64(whole)); err != nil {
			return 0, fmt.Errorf("write %s: %w; cutting off the torn line: %w", d.cfg.Path, werr, err)
		}
	}
	if d.cfg.Sync && n > 0 {
		if err := d.f.Sync(); err != nil {
			// Nothing is known to be on disk: take the lines back, so that
			// they are not in the file twice when Conduit sends them again.
			err = fmt.Errorf("sync %s: %w", d.cfg.Path, err)
			if cerr := d.cut(d.size); cerr != nil {
				return 0, fmt.Errorf("%w; taking back the lines written: %w", err, cerr)
			}
			return 0, err
		}
	}
	d.size += int64(whole)
	if werr != nil {
		return n, fmt.Errorf("write %s: %w", d.cfg.Path, werr) // the record that failed to encode was not reached
	}
	return n, encErr
}

// Teardown closes the file.
func (d *Destination) Teardown(context.Context) error {
	if d.f == nil {
		return nil
	}
	return d.f.Close()
}
