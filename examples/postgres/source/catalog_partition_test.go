package source

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/connkit/connkit/internal/pgtest"
	"github.com/connkit/connkit/sdk"
	"github.com/matryer/is"
)

// partitionedDDL is table m, partitioned by region into m_a, m_b and m_c,
// whose primary key (id, region) interleaves the partitions: ids 1 to 9,
// region a, b, c in turn. Table plain is an ordinary table beside it.
const partitionedDDL = `
	CREATE TABLE m (id int, region text, n int, PRIMARY KEY (id, region)) PARTITION BY LIST (region);
	CREATE TABLE m_a PARTITION OF m FOR VALUES IN ('a');
	CREATE TABLE m_b PARTITION OF m FOR VALUES IN ('b');
	CREATE TABLE m_c PARTITION OF m FOR VALUES IN ('c');
	INSERT INTO m SELECT i, chr(ascii('a') + (i - 1) % 3), i * 10 FROM generate_series(1, 9) i;
	CREATE TABLE plain (id int PRIMARY KEY);`

// changes renders records as "operation collection id/region n".
func changes(recs []sdk.Record) []string {
	var out []string
	for _, r := range recs {
		s := fmt.Sprint(r.Operation, " ", r.Metadata[sdk.MetadataCollection], " ", r.Key.(sdk.StructuredData)["id"], "/", r.Key.(sdk.StructuredData)["region"])
		if after, ok := r.Payload.After.(sdk.StructuredData); ok {
			s += fmt.Sprint(" ", after["n"])
		}
		out = append(out, s)
	}
	return out
}

// A partitioned table named by its parent is snapshotted through the
// parent, every partition's rows in the parent's key order, then its
// changes stream under the parent's name, whichever partition holds the
// row: also a partition attached while streaming, and not one detached.
func TestSourcePartitionedTable(t *testing.T) {
	is := is.New(t)
	url, conn := sourceDB(t, partitionedDDL)
	s := openSource(t, url, map[string]string{"tables": "m", "snapshot.fetchSize": "4"}, nil)
	var want []string
	for i := 1; i <= 9; i++ {
		want = append(want, fmt.Sprintf("snapshot m %d/%c %d", i, 'a'+(i-1)%3, i*10))
	}
	snap := readN(t, s, 9)
	is.Equal(changes(snap), want)
	pos, err := parsePosition(snap[0].Position)
	is.NoErr(err)
	is.Equal(pos.Table, `"public"."m"`)

	pgtest.Exec(t, conn, `INSERT INTO m VALUES (10, 'a', 100), (11, 'b', 110)`)
	pgtest.Exec(t, conn, `INSERT INTO m_c VALUES (12, 'c', 120)`) // into the partition itself
	pgtest.Exec(t, conn, `UPDATE m SET n = -n WHERE id = 2`)
	pgtest.Exec(t, conn, `DELETE FROM m_c WHERE id = 3`)
	is.Equal(changes(readN(t, s, 5)), []string{"create m 10/a 100", "create m 11/b 110", "create m 12/c 120", "update m 2/b -20", "delete m 3/c"})

	// Partitions attached while streaming: one created as a partition, one
	// made as a table and attached.
	pgtest.Exec(t, conn, `CREATE TABLE m_d PARTITION OF m FOR VALUES IN ('d')`)
	pgtest.Exec(t, conn, `INSERT INTO m VALUES (13, 'd', 130)`)
	pgtest.Exec(t, conn, `CREATE TABLE m_e (id int NOT NULL, region text NOT NULL, n int)`)
	pgtest.Exec(t, conn, `ALTER TABLE m ATTACH PARTITION m_e FOR VALUES IN ('e')`)
	pgtest.Exec(t, conn, `INSERT INTO m_e VALUES (14, 'e', 140)`)
	pgtest.Exec(t, conn, `UPDATE m SET n = 141 WHERE id = 14`)
	is.Equal(changes(readN(t, s, 3)), []string{"create m 13/d 130", "create m 14/e 140", "update m 14/e 141"})

	// A detached partition is a table of its own: its changes are not read.
	pgtest.Exec(t, conn, `ALTER TABLE m DETACH PARTITION m_b`)
	pgtest.Exec(t, conn, `INSERT INTO m_b VALUES (15, 'b', 150)`)
	pgtest.Exec(t, conn, `UPDATE m_b SET n = 0`)
	pgtest.Exec(t, conn, `DELETE FROM m_b WHERE id = 5`)
	pgtest.Exec(t, conn, `INSERT INTO m VALUES (16, 'a', 160)`)
	is.Equal(changes(readN(t, s, 1)), []string{"create m 16/a 160"})
	nothingMore(t, s)
}

// A snapshot of a partitioned table resumed after a restart goes on after
// the last acknowledged key, across partitions, under the positions the
// rows had.
func TestSourcePartitionedTableResumes(t *testing.T) {
	is := is.New(t)
	url, conn := sourceDB(t, partitionedDDL)
	settings := map[string]string{"tables": "m,plain", "snapshot.fetchSize": "2"}
	pgtest.Exec(t, conn, `INSERT INTO plain VALUES (1), (2)`)
	s := openSource(t, url, settings, nil)
	all := readN(t, s, 11)
	first := all[:4]
	ackAll(t, s, first)
	is.NoErr(s.Teardown(t.Context()))
	s = openSource(t, url, settings, first[3].Position)
	rest := readN(t, s, 7)
	nothingMore(t, s)
	for i, r := range rest {
		is.Equal(string(r.Position), string(all[4+i].Position))
	}
	is.Equal(changes(append(first, rest...)), changes(all))
}

// A wildcard takes partitioned tables and leaves out their partitions; a
// partition named by itself is an ordinary table; naming a partition
// beside its parent is refused.
func TestSourcePartitionedTableNames(t *testing.T) {
	is := is.New(t)
	url, conn := sourceDB(t, partitionedDDL+`
		CREATE SCHEMA other;
		CREATE TABLE other.m_z PARTITION OF m FOR VALUES IN ('z');
		CREATE TABLE other.solo (id int PRIMARY KEY);
		CREATE TABLE m_f PARTITION OF m FOR VALUES IN ('f') PARTITION BY RANGE (id);
		CREATE TABLE m_f1 PARTITION OF m_f FOR VALUES FROM (0) TO (100)`)
	for _, tt := range []struct{ tables, want string }{
		{"*", `"public"."m" "public"."plain"`},
		{"m,other.*", `"other"."solo" "public"."m"`},
		{"other.*", `"other"."m_z" "other"."solo"`}, // m_z's parent is not read
		{"m_b", `"public"."m_b"`},
		{"m_f,m_b", `"public"."m_b" "public"."m_f"`}, // a partition that is partitioned
	} {
		t.Run(tt.tables, func(t *testing.T) {
			is := is.New(t)
			tables, err := resolveTables(t.Context(), conn, strings.Split(tt.tables, ","), `"public"."connkit_snapshots"`)
			is.NoErr(err)
			var got []string
			for _, tb := range tables {
				got = append(got, tb.ident)
			}
			is.Equal(strings.Join(got, " "), tt.want)
		})
	}
	_, err := resolveTables(t.Context(), conn, []string{"m", "m_b"}, "")
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), `parameter "tables": public.m_b is a partition of public.m, which is read too`))
	pgtest.Exec(t, conn, `CREATE TABLE keyless (v int) PARTITION BY RANGE (v); ALTER TABLE keyless REPLICA IDENTITY FULL`)
	_, err = resolveTables(t.Context(), conn, []string{"keyless"}, "")
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), "partitioned table public.keyless has no primary key"))
	_, err = resolveTables(t.Context(), conn, []string{"m_f1", "m"}, "") // a partition of a partition
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), `parameter "tables": public.m_f1 is a partition of public.m, which is read too`))

	// A partition read by itself streams under its own name.
	s := openSource(t, url, map[string]string{"tables": "m_b"}, nil)
	is.Equal(changes(readN(t, s, 3)), []string{"snapshot m_b 2/b 20", "snapshot m_b 5/b 50", "snapshot m_b 8/b 80"})
	pgtest.Exec(t, conn, `INSERT INTO m VALUES (20, 'b', 200), (21, 'a', 210)`)
	is.Equal(changes(readN(t, s, 1)), []string{"create m_b 20/b 200"})
	nothingMore(t, s)

	// Once the publication publishes its changes under its parent's name,
	// the source fails rather than miss them.
	pgtest.Exec(t, conn, `ALTER PUBLICATION connkit ADD TABLE m`)
	pgtest.Exec(t, conn, `ALTER PUBLICATION connkit SET (publish_via_partition_root = true)`)
	pgtest.Exec(t, conn, `INSERT INTO m VALUES (22, 'b', 220)`)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	recs, err := s.ReadBatch(ctx, 1)
	is.True(err != nil) // no record: it would come under public.m
	is.Equal(len(recs), 0)
	is.True(strings.Contains(err.Error(), "publication connkit now publishes the changes of partition public.m_b under the name of public.m"))
}

// An existing publication that lists partitions and does not publish via
// the partition root is changed to, and keeps the partitions listed: their
// changes come once, under the parent's name. A partition read by itself
// through that publication is refused, since its changes come under the
// parent's name.
func TestSourcePartitionedTableExistingPublication(t *testing.T) {
	is := is.New(t)
	url, conn := sourceDB(t, partitionedDDL+`; CREATE PUBLICATION pub FOR TABLE m_a, m_b`)
	settings := map[string]string{"tables": "m", "publication.name": "pub"}
	s := openSource(t, url, settings, nil)
	readN(t, s, 9)
	is.Equal(pgtest.Rows(t, conn, `SELECT pubviaroot FROM pg_publication WHERE pubname = 'pub'`), []string{"true"})
	is.Equal(pgtest.Rows(t, conn, `SELECT prrelid::regclass::text FROM pg_publication_rel ORDER BY 1`), []string{"m", "m_a", "m_b"})
	pgtest.Exec(t, conn, `INSERT INTO m_a VALUES (10, 'a', 100)`)
	pgtest.Exec(t, conn, `INSERT INTO m VALUES (11, 'b', 110), (12, 'c', 120)`)
	is.Equal(changes(readN(t, s, 3)), []string{"create m 10/a 100", "create m 11/b 110", "create m 12/c 120"})
	nothingMore(t, s)
	is.NoErr(s.Teardown(t.Context()))

	_, err := tryOpenSource(t, url, map[string]string{"tables": "m_c", "publication.name": "pub"}, nil)
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), `publication pub does not publish the changes of table public.m_c under its name`))
}

// A partitioned table added to the tables of a streaming source is
// snapshotted in chunks, in the parent's key order, while changes stream.
func TestSourcePartitionedTableAdded(t *testing.T) {
	is := is.New(t)
	url, conn := sourceDB(t, partitionedDDL)
	s := openSource(t, url, map[string]string{"tables": "plain"}, nil)
	pgtest.Exec(t, conn, `INSERT INTO plain VALUES (1)`)
	recs := readN(t, s, 1)
	ackAll(t, s, recs)
	is.NoErr(s.Teardown(t.Context()))

	s = openSource(t, url, map[string]string{"tables": "plain,m", "snapshot.fetchSize": "4"}, recs[0].Position)
	got := readN(t, s, 9)
	var want []string
	for i := 1; i <= 9; i++ {
		want = append(want, fmt.Sprintf("snapshot m %d/%c %d", i, 'a'+(i-1)%3, i*10))
	}
	is.Equal(changes(got), want)
	pgtest.Exec(t, conn, `INSERT INTO m_b VALUES (10, 'b', 100)`)
	is.Equal(changes(readN(t, s, 1)), []string{"create m 10/b 100"})
	nothingMore(t, s)
}

// A publication FOR ALL TABLES that does not publish via the partition
// root is changed to.
func TestSourcePartitionedTableAllTablesPublication(t *testing.T) {
	is := is.New(t)
	url, conn := sourceDB(t, partitionedDDL+`; CREATE PUBLICATION allpub FOR ALL TABLES`)
	s := openSource(t, url, map[string]string{"tables": "m", "publication.name": "allpub"}, nil)
	readN(t, s, 9)
	is.Equal(pgtest.Rows(t, conn, `SELECT pubviaroot FROM pg_publication WHERE pubname = 'allpub'`), []string{"true"})
	pgtest.Exec(t, conn, `INSERT INTO m_b VALUES (10, 'b', 100)`)
	is.Equal(changes(readN(t, s, 1)), []string{"create m 10/b 100"})
	nothingMore(t, s)
}

// A parent by inheritance (not partitioning) is an ordinary table: its
// snapshot reads its own rows, not its children's, whose changes stream
// under their own names only if they are read.
func TestSourceInheritanceParentReadsItsOwnRows(t *testing.T) {
	is := is.New(t)
	url, _ := sourceDB(t, `
		CREATE TABLE parent (id int PRIMARY KEY, region text, n int);
		CREATE TABLE child (PRIMARY KEY (id)) INHERITS (parent);
		INSERT INTO parent VALUES (1, 'p', 10), (2, 'p', 20);
		INSERT INTO child VALUES (3, 'c', 30)`)
	s := openSource(t, url, map[string]string{"tables": "parent"}, nil)
	is.Equal(changes(readN(t, s, 2)), []string{"snapshot parent 1/<nil> 10", "snapshot parent 2/<nil> 20"})
	nothingMore(t, s)
}
