package postgres

import (
	"encoding/json"
	"fmt"

	"github.com/connkit/connkit/sdk"
	"github.com/jackc/pglogrepl"
)

// position is where the source is, encoded as JSON in every record's
// position. During the snapshot it names the table being copied and the
// text of the last key read in it (tables are copied in name order, rows in
// key order); during change data capture it names the transaction, by the
// LSN of its commit record, and the change's index within it. Either way a
// restart resumes right after the record.
type position struct {
	Table string   `json:"table,omitempty"` // snapshot: the table, schema-qualified
	Key   []string `json:"key,omitempty"`   // snapshot: the key's columns as text, in key order
	LSN   string   `json:"lsn,omitempty"`   // CDC: the commit LSN of the transaction
	Index int      `json:"i,omitempty"`     // CDC: the change's index in the transaction, from 0
}

func (p position) snapshot() bool { return p.Table != "" }

func (p position) bytes() sdk.Position {
	b, _ := json.Marshal(p) // strings and an int cannot fail
	return b
}

// cdcPosition is the position of the change at index i of the transaction
// that commits at lsn.
func cdcPosition(lsn pglogrepl.LSN, i int) sdk.Position {
	return position{LSN: lsn.String(), Index: i}.bytes()
}

// parsePosition reads a position written by this source.
func parsePosition(b sdk.Position) (position, error) {
	var p position
	if err := json.Unmarshal(b, &p); err != nil {
		return p, fmt.Errorf("position %q is not a postgres source position: %w", b, err)
	}
	if p.snapshot() == (p.LSN != "") {
		return p, fmt.Errorf("position %q is not a postgres source position: expected a table and key or an LSN", b)
	}
	if p.LSN != "" {
		if _, err := pglogrepl.ParseLSN(p.LSN); err != nil {
			return p, fmt.Errorf("position %q is not a postgres source position: %w", b, err)
		}
	}
	return p, nil
}

// lsn is the position's LSN; zero for a snapshot position.
func (p position) lsn() pglogrepl.LSN {
	l, _ := pglogrepl.ParseLSN(p.LSN) // checked by parsePosition
	return l
}
