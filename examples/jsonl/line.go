package jsonl

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"unicode/utf8"

	"github.com/connkit/connkit/sdk"
)

// line is a record as one line of the file. Data keeps whether it was raw
// (bytes, base64 in JSON) or structured (a JSON object).
type line struct {
	Position  []byte            `json:"position,omitempty"`
	Operation string            `json:"operation"`
	Metadata  map[string]string `json:"metadata,omitempty"`
	Key       *data             `json:"key,omitempty"`
	Before    *data             `json:"before,omitempty"`
	After     *data             `json:"after,omitempty"`
}

type data struct {
	Raw        []byte          `json:"raw,omitempty"`
	Structured *map[string]any `json:"structured,omitempty"` // set, if only to {}, for structured data
}

func toData(d sdk.Data) *data {
	switch d := d.(type) {
	case nil:
		return nil
	case sdk.StructuredData:
		m := map[string]any(d)
		if m == nil {
			m = map[string]any{}
		}
		return &data{Structured: &m}
	default:
		return &data{Raw: d.Bytes()}
	}
}

func (d *data) sdk() sdk.Data {
	switch {
	case d == nil:
		return nil
	case d.Structured != nil:
		return sdk.StructuredData(*d.Structured)
	default:
		return sdk.RawData(d.Raw)
	}
}

// encode returns r as a line of JSON, without the newline. A string that
// is not valid UTF-8 (in metadata or structured data) is an
// [*sdk.InvalidUTF8Error]: encoding/json would replace its invalid bytes.
func encode(r sdk.Record) ([]byte, error) {
	b, err := json.Marshal(line{
		Position:  r.Position,
		Operation: r.Operation.String(),
		Metadata:  r.Metadata,
		Key:       toData(r.Key),
		Before:    toData(r.Payload.Before),
		After:     toData(r.Payload.After),
	})
	// encoding/json writes each invalid byte as \ufffd, and a valid U+FFFD
	// as itself: only a line with that escape needs a closer look.
	if err == nil && bytes.Contains(b, []byte(`\ufffd`)) {
		err = checkUTF8(r)
	}
	return b, err
}

// checkUTF8 returns an [*sdk.InvalidUTF8Error] naming a string of r that
// is not valid UTF-8, or nil.
func checkUTF8(r sdk.Record) error {
	for k, v := range r.Metadata {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return &sdk.InvalidUTF8Error{Field: "metadata." + k, Name: !utf8.ValidString(k)}
		}
	}
	for _, d := range []struct {
		path string
		data sdk.Data
	}{{"key", r.Key}, {"payload.before", r.Payload.Before}, {"payload.after", r.Payload.After}} {
		var text *sdk.InvalidUTF8Error
		if errors.As(sdk.CheckUTF8(d.data), &text) {
			return &sdk.InvalidUTF8Error{Field: d.path + "." + text.Field, Name: text.Name}
		}
	}
	return nil
}

// decode parses a line of the file. A line that is not valid UTF-8 is an
// error: parsing it would replace the invalid bytes with U+FFFD.
func decode(b []byte) (sdk.Record, error) {
	if !utf8.Valid(b) {
		return sdk.Record{}, fmt.Errorf("not valid UTF-8 text (byte %d): raw data belongs in \"raw\", as base64", invalidAt(b))
	}
	var l line
	if err := json.Unmarshal(b, &l); err != nil {
		return sdk.Record{}, err
	}
	var op sdk.Operation
	if err := op.UnmarshalText([]byte(l.Operation)); err != nil {
		return sdk.Record{}, fmt.Errorf("operation %q: %w", l.Operation, err)
	}
	return sdk.Record{
		Position:  l.Position,
		Operation: op,
		Metadata:  l.Metadata,
		Key:       l.Key.sdk(),
		Payload:   sdk.Change{Before: l.Before.sdk(), After: l.After.sdk()},
	}, nil
}

// invalidAt returns the offset of the first byte of b that is not part of
// valid UTF-8.
func invalidAt(b []byte) int {
	at := 0
	for at < len(b) {
		r, size := utf8.DecodeRune(b[at:])
		if r == utf8.RuneError && size == 1 {
			break
		}
		at += size
	}
	return at
}

// ReadFile returns the records in a file the destination wrote, with the
// positions they were written with.
func ReadFile(path string) ([]sdk.Record, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []sdk.Record
	s := bufio.NewScanner(f)
	s.Buffer(nil, maxLine)
	for n := 1; s.Scan(); n++ {
		r, err := decode(s.Bytes())
		if err != nil {
			return out, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		out = append(out, r)
	}
	return out, s.Err()
}

// maxLine is the longest line the source reads: a record Conduit sends is
// at most 4 MiB by default, and JSON and base64 make it longer.
const maxLine = 64 << 20
