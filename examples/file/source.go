package file

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/connkit/connkit/sdk"
)

// MetadataPath is the metadata key of the path a record's line was read
// from.
const MetadataPath = "file.path"

// poll is how often the source looks for a line at the end of the file, or
// for the file while it does not exist.
const poll = 100 * time.Millisecond

// Source follows a file as it grows and reads each line as a record:
//
//   - position: the offset in the file after the line (its newline
//     included), in decimal;
//   - operation: create;
//   - key: the line's number, raw, counted from 1 at the position the
//     source started from (after a restart, from where it resumed);
//   - payload: the line without its newline, raw, after;
//   - metadata: file.path, the path parameter, and opencdc.readAt.
//
// A line is read once its newline is written. These are the incumbent's
// records, except that it also reads a line still being written, as
// a record of its own.
type Source struct {
	tail  tail
	lines int // read since Open
}

// NewSource returns a source; it opens the file in Open, or in Read once
// the file exists.
func NewSource(cfg Config) (*Source, error) {
	return &Source{tail: tail{path: cfg.Path}}, nil
}

// Open resumes after the line at position from, the offset it ends at.
// The longest line it reads is the plugin's record size limit
// ([sdk.MaxRecordSize]); a longer one stops the source with an error that
// names its offset. It fails if path is a directory or cannot be read; a
// file that does not exist yet is waited for.
func (s *Source) Open(ctx context.Context, from sdk.Position) error {
	s.tail.limit = sdk.MaxRecordSize(ctx)
	if from != nil {
		off, err := strconv.ParseInt(string(from), 10, 64)
		if err != nil || off < 0 {
			return fmt.Errorf("position %q is not a file position (an offset in the file, in decimal)", from)
		}
		s.tail.offset = off
	}
	info, err := os.Stat(s.tail.path)
	if err == nil && info.IsDir() {
		return fmt.Errorf(`parameter "path": %s is a directory, not a file`, s.tail.path)
	}
	exists, err := s.tail.open()
	if err != nil {
		return fmt.Errorf(`parameter "path": %w`, err)
	}
	if !exists {
		sdk.Logger(ctx).Warn(fmt.Sprintf("file: %s does not exist yet; looking for it every %v", s.tail.path, poll), "path", s.tail.path)
	}
	return nil
}

// Read returns the next line's record, waiting for it until ctx is done.
func (s *Source) Read(ctx context.Context) (sdk.Record, error) {
	for {
		line, ok, err := s.tail.next()
		if err != nil {
			return sdk.Record{}, err
		}
		if ok {
			s.lines++
			return s.record(line), nil
		}
		select {
		case <-ctx.Done():
			return sdk.Record{}, ctx.Err()
		case <-time.After(poll):
		}
	}
}

// record is the record of the line just read.
func (s *Source) record(line []byte) sdk.Record {
	return sdk.Create(
		sdk.Position(strconv.FormatInt(s.tail.offset, 10)),
		sdk.Metadata{MetadataPath: s.tail.path},
		sdk.RawData(strconv.Itoa(s.lines)),
		sdk.RawData(bytes.Clone(line)),
	)
}

// Teardown closes the file.
func (s *Source) Teardown(context.Context) error { return s.tail.close() }
