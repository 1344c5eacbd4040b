package jsonl

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"time"

	"github.com/connkit/connkit/sdk"
)

// SourceConfig is the source's configuration.
type SourceConfig struct {
	Path string        `param:"path" validate:"required" desc:"The file of JSON lines to read, as the jsonl destination writes it."`
	Poll time.Duration `param:"poll" default:"1s" validate:"gt=0" desc:"How often to look for new lines once the end of the file is reached, or for the file if it does not exist yet."`
}

// Source reads a file of JSON lines and follows it as it grows. A record's
// position is the file offset after its line; the position it was written
// with is in its metadata as jsonl.position.
type Source struct {
	cfg    SourceConfig
	f      *os.File
	lines  *bufio.Scanner // f's lines from offset on
	offset int64          // after the last line read
	limit  int            // the longest line, in bytes, newline aside
	// missing is set while the file does not exist, so that its appearance
	// is logged as its absence was.
	missing bool
}

// NewSource returns a source; it opens the file in Read, once it exists:
// following a file that is created later is a feature (a pipeline may start
// before the process that writes the file), so a missing file is logged as
// a warning at Open, once, and looked for every poll.
func NewSource(cfg SourceConfig) (*Source, error) {
	return &Source{cfg: cfg, limit: sdk.MaxRecordSize(context.Background())}, nil
}

// Open resumes after the line at position from, the offset it ends at. The
// longest line it reads is the plugin's record size limit
// ([sdk.MaxRecordSize]); a longer one stops the source with an error that
// names its offset. It fails if path can never be read: a directory, a file it may not open, or
// a missing file it was reading before (a position cannot point into a file
// that is not there). A file that does not exist yet is waited for.
func (s *Source) Open(ctx context.Context, from sdk.Position) error {
	s.limit = sdk.MaxRecordSize(ctx)
	if from != nil {
		off, err := strconv.ParseInt(string(from), 10, 64)
		if err != nil || off < 0 {
			return fmt.Errorf("position %q is not a jsonl position (an offset in the file)", from)
		}
		s.offset = off
	}
	info, err := os.Stat(s.cfg.Path)
	switch {
	case errors.Is(err, os.ErrNotExist) && from != nil:
		return fmt.Errorf(`parameter "path": %s does not exist, but the source was reading it (position %q): was it moved or deleted?`, s.cfg.Path, from)
	case errors.Is(err, os.ErrNotExist):
		s.missing = true
		sdk.Logger(ctx).Warn(fmt.Sprintf("jsonl: %s does not exist yet; looking for it every %v (parameter poll)", s.cfg.Path, s.cfg.Poll), "path", s.cfg.Path)
		return nil
	case err != nil:
		return fmt.Errorf(`parameter "path": %w`, err)
	case info.IsDir():
		return fmt.Errorf(`parameter "path": %s is a directory, not a file of JSON lines`, s.cfg.Path)
	}
	f, err := os.Open(s.cfg.Path)
	if err != nil {
		return fmt.Errorf(`parameter "path": %w`, err)
	}
	return f.Close() // Read opens it again, where it resumes
}

// Read returns the next line's record, waiting for it at the end of the
// file until ctx is done.
func (s *Source) Read(ctx context.Context) (sdk.Record, error) {
	for {
		rec, ok, err := s.next()
		if s.missing && s.f != nil {
			s.missing = false
			sdk.Logger(ctx).Info("jsonl: "+s.cfg.Path+" exists now; reading it", "path", s.cfg.Path)
		}
		if ok || err != nil {
			return rec, err
		}
		select {
		case <-ctx.Done():
			return sdk.Record{}, ctx.Err()
		case <-time.After(s.cfg.Poll):
		}
	}
}

// next reads the next whole line; ok is false at the end of the file.
func (s *Source) next() (rec sdk.Record, ok bool, err error) {
	if s.f == nil {
		f, err := os.Open(s.cfg.Path)
		if errors.Is(err, os.ErrNotExist) {
			return sdk.Record{}, false, nil
		}
		if err != nil {
			return sdk.Record{}, false, err
		}
		if err := s.readFrom(f); err != nil {
			f.Close()
			return sdk.Record{}, false, err
		}
	}
	at := s.offset
	if !s.lines.Scan() {
		switch err := s.lines.Err(); {
		case errors.Is(err, bufio.ErrTooLong):
			return sdk.Record{}, false, fmt.Errorf("%s: the line at offset %d exceeds the limit of %d bytes, the plugin's record size limit", s.cfg.Path, at, s.limit)
		case err != nil:
			return sdk.Record{}, false, err
		}
		// A partial line is read again once it is complete.
		return sdk.Record{}, false, s.readFrom(s.f)
	}
	b := s.lines.Bytes()
	s.offset += int64(len(b))
	rec, err = decode(b)
	if err != nil {
		return sdk.Record{}, false, fmt.Errorf("%s: the line at offset %d: %w", s.cfg.Path, at, err)
	}
	// A line's own opencdc.readAt, the time its record was first read, is kept.
	rec.Metadata = sdk.Stamp(rec.Metadata)
	if rec.Position != nil {
		rec.Metadata["jsonl.position"] = string(rec.Position)
	}
	rec.Position = sdk.Position(strconv.FormatInt(s.offset, 10))
	return rec, true, nil
}

// Teardown closes the file.
func (s *Source) Teardown(context.Context) error {
	if s.f == nil {
		return nil
	}
	return s.f.Close()
}

// readFrom reads f's lines from the offset on.
func (s *Source) readFrom(f *os.File) error {
	if _, err := f.Seek(s.offset, io.SeekStart); err != nil {
		return err
	}
	s.f, s.lines = f, lines(f, s.limit)
	return nil
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
