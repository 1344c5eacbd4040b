package destination

import (
	"bytes"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// BenchmarkUpsertStrategies compares the set-based ways of upserting a
// batch, on the database alone: one INSERT … SELECT FROM unnest of text
// arrays (what Write does), the same without ON CONFLICT (what Write tries
// first for creates), and COPY, binary or text, into a temporary staging
// table followed by INSERT … SELECT … ON CONFLICT, in one transaction.
func BenchmarkUpsertStrategies(b *testing.B) {
	_, conn := server.Database(b, `CREATE TABLE bench (id bigint PRIMARY KEY, a text, b text, n int)`)
	u := &upsertBench{conn: conn}
	// Upsert is what Write does; plain insert what a run of creates of new
	// rows costs as the insert Write tries first.
	const unnest = `INSERT INTO bench (id, a, b, n) SELECT v1::bigint, v2::text, v3::text, v4::int FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS s(v1, v2, v3, v4)`
	b.Run("unnest", func(b *testing.B) {
		u.unnest(b, unnest+` ON CONFLICT (id) DO UPDATE SET a = EXCLUDED.a, b = EXCLUDED.b, n = EXCLUDED.n`)
	})
	b.Run("plain insert", func(b *testing.B) { u.unnest(b, unnest) })
	b.Run("copy into staging", u.copyIntoStaging)
	b.Run("text copy into staging", u.textCopyIntoStaging)
}

// upsertRows is how many rows each of BenchmarkUpsertStrategies' batches
// upserts.
const upsertRows = 10000

// upsertBench runs BenchmarkUpsertStrategies' ways of upserting, each
// batch of new rows from next on.
type upsertBench struct {
	conn *pgx.Conn
	next int64
}

// unnest upserts each batch with sql, over text arrays.
func (u *upsertBench) unnest(b *testing.B, sql string) {
	cols := [4][]pgtype.Text{}
	for b.Loop() {
		for c := range cols {
			cols[c] = cols[c][:0]
		}
		for range upsertRows {
			u.next++
			cols[0] = append(cols[0], pgtype.Text{String: strconv.FormatInt(u.next, 10), Valid: true})
			cols[1] = append(cols[1], pgtype.Text{String: "row", Valid: true})
			cols[2] = append(cols[2], pgtype.Text{String: "a text column of moderate length", Valid: true})
			cols[3] = append(cols[3], pgtype.Text{String: strconv.FormatInt(u.next%1000, 10), Valid: true})
		}
		if _, err := u.conn.Exec(b.Context(), sql, cols[0], cols[1], cols[2], cols[3]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*upsertRows)/b.Elapsed().Seconds(), "rows/s")
}

// copyIntoStaging upserts each batch through binary COPY into the staging
// table.
func (u *upsertBench) copyIntoStaging(b *testing.B) {
	values := make([][]any, upsertRows)
	for b.Loop() {
		for i := range values {
			u.next++
			values[i] = []any{u.next, "row", "a text column of moderate length", int32(u.next % 1000)}
		}
		u.staged(b, func(tx pgx.Tx) error {
			_, err := tx.CopyFrom(b.Context(), pgx.Identifier{"stage"}, []string{"id", "a", "b", "n"}, pgx.CopyFromRows(values))
			return err
		})
	}
	b.ReportMetric(float64(b.N*upsertRows)/b.Elapsed().Seconds(), "rows/s")
}

// textCopyIntoStaging upserts each batch through text COPY into the
// staging table.
func (u *upsertBench) textCopyIntoStaging(b *testing.B) {
	var buf bytes.Buffer
	for b.Loop() {
		buf.Reset()
		for range upsertRows {
			u.next++
			buf.WriteString(strconv.FormatInt(u.next, 10))
			buf.WriteString("\trow\ta text column of moderate length\t")
			buf.WriteString(strconv.FormatInt(u.next%1000, 10))
			buf.WriteByte('\n')
		}
		u.staged(b, func(tx pgx.Tx) error {
			_, err := tx.Conn().PgConn().CopyFrom(b.Context(), &buf, `COPY stage (id, a, b, n) FROM STDIN`)
			return err
		})
	}
	b.ReportMetric(float64(b.N*upsertRows)/b.Elapsed().Seconds(), "rows/s")
}

// staged copies a batch into a temporary staging table with copyIn and
// upserts from there, in one transaction.
func (u *upsertBench) staged(b *testing.B, copyIn func(pgx.Tx) error) {
	ctx := b.Context()
	tx, err := u.conn.Begin(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `CREATE TEMP TABLE IF NOT EXISTS stage (LIKE bench) ON COMMIT DELETE ROWS`); err != nil {
		b.Fatal(err)
	}
	if err := copyIn(tx); err != nil {
		b.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO bench SELECT * FROM stage ON CONFLICT (id) DO UPDATE SET a = EXCLUDED.a, b = EXCLUDED.b, n = EXCLUDED.n`); err != nil {
		b.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		b.Fatal(err)
	}
}
