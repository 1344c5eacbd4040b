// Package pg holds what the postgres connector's source and destination
// share: the postgres.columns metadata in which the source describes a
// record's table, and the handling of connection URLs and errors.
package pg

import (
	"encoding/json"
	"fmt"
)

// ColumnsKey is the metadata in which the source describes, in every
// record, the columns of the row's table as they were when the row was
// read or changed: what a destination needs to create the table, and to
// follow it as it changes, with the same types. Its value is a JSON array
// of [Column]s in the table's order, e.g.
//
//	[{"name":"id","type":"integer","notNull":true,"key":1},{"name":"price","type":"numeric(40,10)","default":"0"}]
//
// The user types the columns use are described in [TypesKey].
const ColumnsKey = "postgres.columns"

// Column is one column of a record's table.
type Column struct {
	Name string `json:"name"`
	// Type is the column's type as PostgreSQL's format_type spells it:
	// integer, character varying(20), numeric(40,10), text[], a schema-
	// qualified name for a type outside the search path.
	Type    string `json:"type"`
	NotNull bool   `json:"notNull,omitempty"`
	Key     int    `json:"key,omitempty"` // its place in the primary key, from 1; 0: not in it
	// Was is the column's name before a rename seen while the source
	// streamed changes, so that a destination renames its column rather
	// than adding another.
	Was string `json:"was,omitempty"`
	// Default is the column's default expression, as pg_get_expr writes
	// it ('x'::character varying, 0, now()), when the source carries it:
	// one that cannot break a destination's DDL, calling only built-in
	// functions that are not volatile and naming no user object but the
	// column's type and what it is made of. Defaults that read a sequence
	// (nextval), are volatile (random()) or call a user function are left
	// out.
	Default string `json:"default,omitempty"`
}

// EncodeColumns is the metadata value describing cols.
func EncodeColumns(cols []Column) string { return encode(cols) }

// DecodeColumns reads a metadata value EncodeColumns made, checking
// that every column has a name and a type.
func DecodeColumns(s string) ([]Column, error) {
	var cols []Column
	if err := json.Unmarshal([]byte(s), &cols); err != nil {
		return nil, fmt.Errorf("metadata %s: %w", ColumnsKey, err)
	}
	for i, c := range cols {
		if c.Name == "" || c.Type == "" {
			return nil, fmt.Errorf("metadata %s: column %d has no name or no type", ColumnsKey, i+1)
		}
	}
	return cols, nil
}
