package jsonl

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
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
	r      *bufio.Reader
	offset int64 // after the last line read
	limit  int   // the longest line, in bytes, newline aside
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
	var wait *time.Timer
	for {
		rec, ok, err := s.next()
		if s.missing && s.f != nil {
			s.missing = false
			sdk.Logger(ctx).Info("jsonl: "+s.cfg.Path+" exists now; reading it", "path", s.cfg.Path)
		}
		if ok || err != nil {
			return rec, err
		}
		if wait == nil {
			wait = time.NewTimer(s.cfg.Poll)
			defer wait.Stop()
		} else {
			wait.Reset(s.cfg.Poll)
		}
		select {
		case <-ctx.Done():
			return sdk.Record{}, ctx.Err()
		case <-wait.C:
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
		if _, err := f.Seek(s.offset, io.SeekStart); err != nil {
			f.Close()
			return sdk.Record{}, false, err
		}
		s.f, s.r = f, bufio.NewReaderSize(f, 64<<10)
	}
	at := s.offset
	b, err := readLine(s.r, s.limit)
	if errors.Is(err, errLineTooLong) {
		return sdk.Record{}, false, fmt.Errorf("%s: the line at offset %d exceeds the limit of %d bytes, the plugin's record size limit", s.cfg.Path, at, s.limit)
	}
	if errors.Is(err, io.EOF) {
		// A partial line is read again once it is complete.
		if _, err := s.f.Seek(s.offset, io.SeekStart); err != nil {
			return sdk.Record{}, false, err
		}
		s.r.Reset(s.f)
		return sdk.Record{}, false, nil
	}
	if err != nil {
		return sdk.Record{}, false, err
	}
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
			long = append(long, b...) // b is r's: copied before r reads again
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
