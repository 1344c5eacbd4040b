package source

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/connkit/connkit/sdk"
	"github.com/jackc/pglogrepl"
)

// position is where the source is, encoded as JSON in every record's
// position. A change's names its transaction, by the LSN of its commit
// record, and the change's index within it. A chunk row's (engine.go)
// names its table, key and version, and the commit LSN of the high
// watermark at which its chunk was emitted. Either way a restart resumes
// right after the record. A copy without changes (snapshot.mode
// initial_only) names the table and key alone, as did the snapshot of
// earlier versions, read in one transaction.
type position struct {
	Table string   `json:"table,omitempty"` // snapshot: the table, schema-qualified
	Key   []string `json:"key,omitempty"`   // snapshot: the key's columns as text, in key order
	// CTID is, in the snapshot of a keyless table, the row's ctid ("(block,offset)"),
	// in place of a key: the table is read in ctid order (engine_chunk.go).
	CTID string `json:"ctid,omitempty"`
	// Version is, in the snapshot, the row version read (its xmin): a row
	// read again unchanged after a restart has the same position, so an
	// exactly-once destination skips it, and a row changed meanwhile a
	// new one, so that its new version is written.
	Version string `json:"v,omitempty"`
	LSN     string `json:"lsn,omitempty"` // the commit LSN of the change's transaction, or of the chunk's high watermark
	Index   int    `json:"i,omitempty"`   // CDC: the change's index in the transaction, from 0
}

// snapshotPrefix starts every position that names a table: a chunk
// row's.
var snapshotPrefix = []byte(`{"table"`)

// snapshot reports whether p is a position of a copy without changes.
func (p position) snapshot() bool { return p.Table != "" && p.LSN == "" }

// inChunk reports whether p is a position of a chunk read between
// watermarks.
func (p position) inChunk() bool { return p.Table != "" && p.LSN != "" }

// bytes encodes p as encoding/json would, but several times faster: every
// record gets a position.
func (p position) bytes() sdk.Position {
	if p.Table == "" {
		lsn, _ := pglogrepl.ParseLSN(p.LSN)
		return cdcPosition(lsn, p.Index)
	}
	n := len(p.Table) + len(p.Version) + len(p.LSN) + len(p.CTID) + 44
	for _, k := range p.Key {
		n += len(k) + 3
	}
	b := make([]byte, 0, n)
	b = append(b, `{"table":`...)
	b = appendJSONString(b, p.Table)
	if p.CTID != "" {
		b = append(b, `,"ctid":`...)
		b = appendJSONString(b, p.CTID)
	} else {
		b = appendKey(b, p.Key)
	}
	if p.Version != "" {
		b = append(b, `,"v":`...)
		b = appendJSONString(b, p.Version)
	}
	if p.LSN != "" {
		b = append(b, `,"lsn":`...)
		b = appendJSONString(b, p.LSN)
	}
	return append(b, '}')
}

// appendKey appends a position's key.
func appendKey(b []byte, key []string) []byte {
	b = append(b, `,"key":[`...)
	for i, k := range key {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, k)
	}
	return append(b, ']')
}

// after is where a snapshot resumed after p reads on: after its key, or
// after its ctid for a keyless table.
func (p position) after() []string {
	if p.CTID != "" {
		return []string{p.CTID}
	}
	return p.Key
}

// cdcPosition is the position of the change at index i of the transaction
// that commits at lsn.
func cdcPosition(lsn pglogrepl.LSN, i int) sdk.Position {
	b := make([]byte, 0, 48)
	b = append(b, `{"lsn":"`...)
	b = appendHex(b, uint32(lsn>>32))
	b = append(b, '/')
	b = appendHex(b, uint32(lsn))
	b = append(b, '"')
	if i != 0 {
		b = append(b, `,"i":`...)
		b = strconv.AppendInt(b, int64(i), 10)
	}
	return append(b, '}')
}

// appendHex appends v in upper-case hexadecimal, as PostgreSQL writes LSNs.
func appendHex(b []byte, v uint32) []byte {
	const digits = "0123456789ABCDEF"
	if v == 0 {
		return append(b, '0')
	}
	var buf [8]byte
	i := len(buf)
	for ; v > 0; v >>= 4 {
		i--
		buf[i] = digits[v&0xf]
	}
	return append(b, buf[i:]...)
}

// appendJSONString appends s as a JSON string. PostgreSQL's text is valid
// UTF-8, which JSON carries as it is; only quotes, backslashes and control
// characters need escapes.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c == '\t':
			b = append(b, '\\', 't')
		case c == '\b':
			b = append(b, '\\', 'b')
		case c == '\f':
			b = append(b, '\\', 'f')
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// parsePosition reads a position written by this source.
func parsePosition(b sdk.Position) (position, error) {
	var p position
	if err := json.Unmarshal(b, &p); err != nil {
		return p, fmt.Errorf("position %q is not a postgres source position: %w", b, err)
	}
	if p.Table == "" && p.LSN == "" {
		return p, fmt.Errorf("position %q is not a postgres source position: expected a table and key or an LSN", b)
	}
	if p.Table != "" && p.Index != 0 {
		return p, fmt.Errorf("position %q is not a postgres source position: a change's index with a table", b)
	}
	if p.LSN != "" {
		if _, err := pglogrepl.ParseLSN(p.LSN); err != nil {
			return p, fmt.Errorf("position %q is not a postgres source position: %w", b, err)
		}
	}
	if p.CTID != "" {
		if _, err := parseTID(p.CTID); err != nil || p.Table == "" || p.Key != nil {
			return p, fmt.Errorf("position %q is not a postgres source position: expected a ctid (block,offset) in place of a key", b)
		}
	}
	if p.Version != "" {
		if _, err := strconv.ParseUint(p.Version, 10, 32); err != nil || p.Table == "" {
			return p, fmt.Errorf("position %q is not a postgres source position: expected a row version (xmin) in a snapshot position", b)
		}
	}
	return p, nil
}

// lsn is the position's LSN; zero for a snapshot position.
func (p position) lsn() pglogrepl.LSN {
	l, _ := pglogrepl.ParseLSN(p.LSN) // checked by parsePosition
	return l
}

// positionLSN returns the LSN of a change's position, reading the form
// cdcPosition writes without a JSON decoder: acks come once per record.
func positionLSN(b sdk.Position) (pglogrepl.LSN, error) {
	if rest, ok := bytes.CutPrefix(b, []byte(`{"lsn":"`)); ok {
		if end := bytes.IndexByte(rest, '"'); end > 0 {
			if hi, lo, ok := bytes.Cut(rest[:end], []byte("/")); ok {
				h, err1 := strconv.ParseUint(string(hi), 16, 32)
				l, err2 := strconv.ParseUint(string(lo), 16, 32)
				if err1 == nil && err2 == nil {
					return pglogrepl.LSN(h<<32 | l), nil
				}
			}
		}
	}
	p, err := parsePosition(b)
	if err != nil {
		return 0, err
	}
	if p.snapshot() {
		return 0, fmt.Errorf("position %q is a snapshot position, not a change's", b)
	}
	return p.lsn(), nil
}
