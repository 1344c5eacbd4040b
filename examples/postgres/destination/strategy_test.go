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
	const rows = 10000
	ctx := b.Context()
	_, conn := server.Database(b, `CREATE TABLE bench (id bigint PRIMARY KEY, a text, b text, n int)`)
	next := int64(0)
	// Upsert is what Write does; plain insert what a run of creates of new
	// rows costs as the insert Write tries first.
	const unnest = `INSERT INTO bench (id, a, b, n) SELECT v1::bigint, v2::text, v3::text, v4::int FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS s(v1, v2, v3, v4)`
	for _, sc := range []struct{ name, sql string }{
		{"unnest", unnest + ` ON CONFLICT (id) DO UPDATE SET a = EXCLUDED.a, b = EXCLUDED.b, n = EXCLUDED.n`},
		{"plain insert", unnest},
	} {
		b.Run(sc.name, func(b *testing.B) {
			cols := [4][]pgtype.Text{}
			for b.Loop() {
				for c := range cols {
					cols[c] = cols[c][:0]
				}
				for range rows {
					next++
					cols[0] = append(cols[0], pgtype.Text{String: strconv.FormatInt(next, 10), Valid: true})
					cols[1] = append(cols[1], pgtype.Text{String: "row", Valid: true})
					cols[2] = append(cols[2], pgtype.Text{String: "a text column of moderate length", Valid: true})
					cols[3] = append(cols[3], pgtype.Text{String: strconv.FormatInt(next%1000, 10), Valid: true})
				}
				if _, err := conn.Exec(ctx, sc.sql, cols[0], cols[1], cols[2], cols[3]); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*rows)/b.Elapsed().Seconds(), "rows/s")
		})
	}
	// staged copies a batch into a temporary staging table with copyIn and
	// upserts from there, in one transaction.
	staged := func(b *testing.B, copyIn func(pgx.Tx) error) {
		tx, err := conn.Begin(ctx)
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
	b.Run("copy into staging", func(b *testing.B) {
		values := make([][]any, rows)
		for b.Loop() {
			for i := range values {
				next++
				values[i] = []any{next, "row", "a text column of moderate length", int32(next % 1000)}
			}
			staged(b, func(tx pgx.Tx) error {
				_, err := tx.CopyFrom(ctx, pgx.Identifier{"stage"}, []string{"id", "a", "b", "n"}, pgx.CopyFromRows(values))
				return err
			})
		}
		b.ReportMetric(float64(b.N*rows)/b.Elapsed().Seconds(), "rows/s")
	})
	b.Run("text copy into staging", func(b *testing.B) {
		var buf bytes.Buffer
		for b.Loop() {
			buf.Reset()
			for range rows {
				next++
				buf.WriteString(strconv.FormatInt(next, 10))
				buf.WriteString("\trow\ta text column of moderate length\t")
				buf.WriteString(strconv.FormatInt(next%1000, 10))
				buf.WriteByte('\n')
			}
			staged(b, func(tx pgx.Tx) error {
				_, err := tx.Conn().PgConn().CopyFrom(ctx, &buf, `COPY stage (id, a, b, n) FROM STDIN`)
				return err
			})
		}
		b.ReportMetric(float64(b.N*rows)/b.Elapsed().Seconds(), "rows/s")
	})
}
