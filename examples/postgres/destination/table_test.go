package destination

import (
	"strings"
	"testing"

	"github.com/connkit/connkit/internal/pgtest"
	"github.com/connkit/connkit/sdk"
	"github.com/matryer/is"
)

// Columns added to a table while the destination runs are found: the
// table is read again when a record names a column not yet seen, and,
// with auto.evolve off, only a column that is still missing is the
// record's fault.
func TestColumnsAddedWhileRunning(t *testing.T) {
	is := is.New(t)
	ctx := t.Context()
	conn, d := setup(t, `CREATE TABLE t (id int PRIMARY KEY, n int)`, map[string]string{"table": "t", "auto.evolve": "false"})
	n, err := d.Write(ctx, []sdk.Record{rec("1", sdk.OperationCreate, sdk.StructuredData{"id": 1}, sdk.StructuredData{"n": 1})})
	is.NoErr(err)
	is.Equal(n, 1)

	_, err = conn.Exec(ctx, `ALTER TABLE t ADD COLUMN c2 text`)
	is.NoErr(err)
	batch := []sdk.Record{
		rec("2", sdk.OperationCreate, sdk.StructuredData{"id": 2}, sdk.StructuredData{"n": 2, "c2": "two"}),
		rec("3", sdk.OperationUpdate, sdk.StructuredData{"id": 1}, sdk.RawData(`{"n": 1, "c2": "one"}`)),
		rec("4", sdk.OperationCreate, sdk.StructuredData{"id": 4}, sdk.StructuredData{"n": 4, "c3": "never added"}),
		rec("5", sdk.OperationCreate, sdk.StructuredData{"id": 5}, sdk.StructuredData{"n": 5}),
	}
	n, err = d.Write(ctx, batch)
	is.Equal(n, 2)
	is.True(sdk.IsRecordFault(err))
	is.True(strings.Contains(err.Error(), `record at position "4": column "c3" does not exist in table t`))
	n, err = d.Write(ctx, batch[3:])
	is.NoErr(err)
	is.Equal(n, 1)
	is.Equal(pgtest.Rows(t, conn, `SELECT id, n, c2 FROM t ORDER BY id`), []string{"1|1|one", "2|2|two", "5|5|<nil>"})
}

// The catalog is read again at most once per batch for a table.
func TestColumnsReadAgainOncePerBatch(t *testing.T) {
	is := is.New(t)
	ctx := t.Context()
	conn, d := setup(t, `CREATE TABLE t (id int PRIMARY KEY)`, nil)
	tbl, err := d.table(ctx, "t", 1)
	is.NoErr(err)
	tbl, missing, err := d.missingColumns(ctx, tbl, []string{"id"}, 1)
	is.NoErr(err)
	is.Equal(len(missing), 0)

	_, err = conn.Exec(ctx, `ALTER TABLE t ADD COLUMN a int`)
	is.NoErr(err)
	tbl, missing, err = d.missingColumns(ctx, tbl, []string{"a", "id"}, 1) // read in this batch already
	is.NoErr(err)
	is.Equal(missing, []string{"a"})

	read := tbl
	tbl, missing, err = d.missingColumns(ctx, tbl, []string{"a", "id"}, 2) // read again
	is.NoErr(err)
	is.Equal(len(missing), 0)
	is.True(tbl != read)             // a fresh description: the one read before is never changed
	is.Equal(len(read.types), 1)     // so a Write planning with it meanwhile sees it whole
	is.True(d.tables["t"] == tbl)    // the fresh one is cached
	is.True(tbl.hints == read.hints) // and keeps what Writes learnt of the table
	_, err = conn.Exec(ctx, `ALTER TABLE t ADD COLUMN b int`)
	is.NoErr(err)
	tbl, missing, err = d.missingColumns(ctx, tbl, []string{"b"}, 2) // not twice
	is.NoErr(err)
	is.Equal(missing, []string{"b"})

	_, err = conn.Exec(ctx, `DROP TABLE t`)
	is.NoErr(err)
	_, _, err = d.missingColumns(ctx, tbl, []string{"c"}, 3)
	is.True(sdk.IsRecordFault(err))
	is.Equal(err.Error(), "table t does not exist (or has no columns)")
}

// A column dropped while the destination runs is the fault of the records
// that name it, alone; once it is added again, they are written.
func TestColumnDroppedAndAddedAgain(t *testing.T) {
	is := is.New(t)
	ctx := t.Context()
	conn, d := setup(t, `CREATE TABLE t (id int PRIMARY KEY, c2 text)`, map[string]string{"table": "t", "auto.evolve": "false"})
	write := func(recs ...sdk.Record) (int, error) { return d.Write(ctx, recs) }
	_, err := write(rec("1", sdk.OperationCreate, sdk.StructuredData{"id": 1}, sdk.StructuredData{"c2": "one"}))
	is.NoErr(err)

	_, err = conn.Exec(ctx, `ALTER TABLE t DROP COLUMN c2`)
	is.NoErr(err)
	n, err := write(
		rec("2", sdk.OperationCreate, sdk.StructuredData{"id": 2}, sdk.StructuredData{"c2": "two"}),
		rec("3", sdk.OperationCreate, sdk.StructuredData{"id": 3}, nil))
	is.Equal(n, 0)
	is.True(sdk.IsRecordFault(err))
	is.True(strings.Contains(err.Error(), `record at position "2": table t: column "c2" of relation "t" does not exist`))
	n, err = write(rec("3", sdk.OperationCreate, sdk.StructuredData{"id": 3}, nil))
	is.NoErr(err)
	is.Equal(n, 1)

	_, err = conn.Exec(ctx, `ALTER TABLE t ADD COLUMN c2 text`)
	is.NoErr(err)
	n, err = write(rec("4", sdk.OperationCreate, sdk.StructuredData{"id": 4}, sdk.StructuredData{"c2": "four"}))
	is.NoErr(err)
	is.Equal(n, 1)
	is.Equal(pgtest.Rows(t, conn, `SELECT id, c2 FROM t ORDER BY id`), []string{"1|<nil>", "3|<nil>", "4|four"})
}
