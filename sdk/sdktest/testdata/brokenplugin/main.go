// Command brokenplugin is a plugin for the test kit's own tests, with a
// bug in each role, chosen by its "bug" parameter, so that they can see
// the suite find bugs over the protocol:
//
//   - "" (the default): its source restarts from the beginning whatever
//     position it is given, and its destination's Write reports one record
//     fewer than it wrote, without an error;
//   - "none": no bug; its destination appends each record's payload to the
//     file at "path" as a line, and acknowledges it once it is there;
//   - "lose": its source resumes two records after the position it is
//     given, and its destination acknowledges records it keeps in memory
//     until Teardown, so a crash loses them;
//   - "replay": its destination appends the file's last line again when it
//     opens, as a recovery step that replays its last write would.
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/connkit/connkit/sdk"
)

type config struct {
	Bug  string `param:"bug" desc:"Which bug the plugin has: empty, none, lose or replay."`
	Path string `param:"path" desc:"The file the destination appends payloads to; empty: none."`
}

type source struct {
	bug  string
	next int
}

func (s *source) Open(_ context.Context, from sdk.Position) error {
	if from == nil || s.bug == "" { // the default bug: from is ignored
		return nil
	}
	n, err := strconv.Atoi(string(from))
	if err != nil {
		return fmt.Errorf("bad position %q", from)
	}
	s.next = n
	if s.bug == "lose" {
		s.next += 2
	}
	return nil
}

func (s *source) Teardown(context.Context) error { return nil }

func (s *source) Read(ctx context.Context) (sdk.Record, error) {
	if err := ctx.Err(); err != nil {
		return sdk.Record{}, err
	}
	s.next++
	return sdk.Record{
		Position:  sdk.Position(strconv.Itoa(s.next)),
		Operation: sdk.OperationCreate,
		Key:       sdk.RawData(strconv.Itoa(s.next)),
		Payload:   sdk.Change{After: sdk.RawData(fmt.Sprintf(`{"id":%d}`, s.next))},
	}, nil
}

type destination struct {
	config
	held []byte // "lose": what is acknowledged and not yet written
}

func (d *destination) Open(context.Context) error {
	if d.Bug != "replay" || d.Path == "" {
		return nil
	}
	data, err := os.ReadFile(d.Path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	if len(lines) < 2 {
		return nil
	}
	return d.append(lines[len(lines)-2]) // the last complete line, again
}

func (d *destination) Teardown(context.Context) error {
	if d.Bug != "lose" {
		return nil
	}
	held := d.held
	d.held = nil
	return d.append(held)
}

func (d *destination) Write(_ context.Context, records []sdk.Record) (int, error) {
	if d.Bug == "" && len(records) > 1 {
		return len(records) - 1, nil // the bug: a short write without an error
	}
	var lines []byte
	for _, r := range records {
		if r.Payload.After != nil {
			lines = append(append(lines, r.Payload.After.Bytes()...), '\n')
		}
	}
	if d.Bug == "lose" {
		d.held = append(d.held, lines...)
		return len(records), nil
	}
	if err := d.append(lines); err != nil {
		return 0, err
	}
	return len(records), nil
}

func (d *destination) append(lines []byte) error {
	if d.Path == "" || len(lines) == 0 {
		return nil
	}
	f, err := os.OpenFile(d.Path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(lines)
	return errors.Join(err, f.Close())
}

func main() {
	sdk.Serve(sdk.Connector{
		Name:        "fake",
		Version:     "v0.1.0",
		Source:      sdk.NewSource(func(c config) (*source, error) { return &source{bug: c.Bug}, nil }),
		Destination: sdk.NewDestination(func(c config) (*destination, error) { return &destination{config: c}, nil }),
	})
}
