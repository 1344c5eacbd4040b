package source

import (
	"testing"

	"github.com/connkit/connkit/examples/postgres/internal/pg"
	"github.com/connkit/connkit/internal/pgtest"
	"github.com/matryer/is"
)

// TestSourceColumnsFollowDDL: each change describes its table's columns as
// they were when it was made: a column added, renamed (with its first
// name), retyped and dropped between changes; defaults included.
func TestSourceColumnsFollowDDL(t *testing.T) {
	is := is.New(t)
	url, conn := sourceDB(t, `CREATE TABLE t (id int PRIMARY KEY, a varchar(20) NOT NULL DEFAULT 'x', b int)`)
	s := openSource(t, url, map[string]string{"tables": "t"}, nil)
	step := func(ddl string, id int) string {
		t.Helper()
		if ddl != "" {
			pgtest.Exec(t, conn, ddl)
		}
		pgtest.Exec(t, conn, `INSERT INTO t (id) VALUES ($1)`, id)
		recs := readN(t, s, 1)
		ackAll(t, s, recs)
		return recs[0].Metadata[pg.ColumnsKey]
	}
	id := `{"name":"id","type":"integer","notNull":true,"key":1}`
	is.Equal(step("", 1), `[`+id+`,{"name":"a","type":"character varying(20)","notNull":true,"default":"'x'::character varying"},{"name":"b","type":"integer"}]`)
	is.Equal(step(`ALTER TABLE t ADD COLUMN c numeric(10,2)`, 2),
		`[`+id+`,{"name":"a","type":"character varying(20)","notNull":true,"default":"'x'::character varying"},{"name":"b","type":"integer"},{"name":"c","type":"numeric(10,2)"}]`)
	// NOT NULL is what it was at Open, under the column's first name.
	is.Equal(step(`ALTER TABLE t RENAME COLUMN a TO a2`, 3),
		`[`+id+`,{"name":"a2","type":"character varying(20)","notNull":true,"was":"a","default":"'x'::character varying"},{"name":"b","type":"integer"},{"name":"c","type":"numeric(10,2)"}]`)
	is.Equal(step(`ALTER TABLE t ALTER COLUMN b TYPE bigint, ALTER COLUMN a2 TYPE varchar(200)`, 4),
		`[`+id+`,{"name":"a2","type":"character varying(200)","notNull":true,"was":"a","default":"'x'::character varying"},{"name":"b","type":"bigint"},{"name":"c","type":"numeric(10,2)"}]`)
	is.Equal(step(`ALTER TABLE t RENAME COLUMN a2 TO a3`, 5),
		`[`+id+`,{"name":"a3","type":"character varying(200)","notNull":true,"was":"a","default":"'x'::character varying"},{"name":"b","type":"bigint"},{"name":"c","type":"numeric(10,2)"}]`)
	is.Equal(step(`ALTER TABLE t DROP COLUMN c`, 6),
		`[`+id+`,{"name":"a3","type":"character varying(200)","notNull":true,"was":"a","default":"'x'::character varying"},{"name":"b","type":"bigint"}]`)
}
