package destination

import (
	"testing"

	"github.com/connkit/connkit/internal/pgtest"
	"github.com/connkit/connkit/sdk"
	"github.com/matryer/is"
)

// TestColumnsAddedInSourceOrder: columns a record's postgres.columns adds
// together are added in its order, not in their names' order, so that the
// table's columns are in the source's order.
func TestColumnsAddedInSourceOrder(t *testing.T) {
	is := is.New(t)
	conn, d := setup(t, `CREATE TABLE t (id integer PRIMARY KEY)`, nil)
	cols := `[{"name":"id","type":"integer","notNull":true,"key":1},{"name":"zeta","type":"text"},{"name":"alpha","type":"integer","default":"7"}]`
	_, err := d.Write(t.Context(), []sdk.Record{described("1", sdk.OperationCreate, cols, sdk.StructuredData{"id": 1}, sdk.StructuredData{"zeta": "z", "alpha": 1, "extra": true})})
	is.NoErr(err)
	is.Equal(columnTypes(t, conn, "t"), []string{"id integer not null", "zeta text", "alpha integer", "extra boolean"})
	is.Equal(pgtest.Rows(t, conn, `SELECT t::text FROM t`), []string{"(1,z,1,t)"})
}
