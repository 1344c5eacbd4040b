package destination

import (
	"testing"

	"github.com/connkit/connkit/examples/postgres/internal/pg"
	"github.com/matryer/is"
)

// The history follows a column through renames, back to its first name
// included, with the types it had.
func TestColumnHistory(t *testing.T) {
	is := is.New(t)
	d, err := New(Config{URL: "postgres://localhost/db"})
	is.NoErr(err)
	tbl := &table{name: "t", types: map[string]string{"a3": "bigint"}}
	d.remember("t", []columnChange{{column: "a", wasType: "integer"}})
	d.remember("t", []columnChange{{column: "a2", was: "a"}, {column: "a2", wasType: "smallint"}})
	d.remember("t", []columnChange{{column: "a3", was: "a2"}})
	is.Equal(d.history["t"].renamed, map[string]string{"a": "a3", "a2": "a3"})
	is.True(d.changedFrom(tbl, "a3", "integer"))
	is.True(d.changedFrom(tbl, "a3", "smallint"))
	is.True(!d.changedFrom(tbl, "a3", "bigint"))
	is.True(!d.changedFrom(&table{name: "other"}, "a3", "integer"))

	key, values := map[string]any{"id": 1}, map[string]any{"a": 5}
	k, v := d.renamed(tbl, []pg.Column{{Name: "id"}, {Name: "a"}}, key, values)
	is.Equal(k, key)
	is.Equal(v, map[string]any{"a3": 5})
	is.Equal(values, map[string]any{"a": 5}) // copied, not changed
	_, v = d.renamed(tbl, []pg.Column{{Name: "a"}, {Name: "a3"}}, key, values)
	is.Equal(v, values) // a record that has the column under its name now is newer than the rename

	d.remember("t", []columnChange{{column: "a", was: "a3"}})
	is.Equal(d.history["t"].renamed, map[string]string{"a2": "a", "a3": "a"})
	is.True(d.changedFrom(&table{name: "t"}, "a", "integer"))
}
