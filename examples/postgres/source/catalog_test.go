package source

import (
	"fmt"
	"testing"

	"github.com/connkit/connkit/internal/pgtest"
	"github.com/connkit/connkit/sdk"
	"github.com/matryer/is"
)

func TestSourceNames(t *testing.T) {
	is := is.New(t)
	url, conn := sourceDB(t, `
		CREATE SCHEMA "Sales";
		CREATE TABLE "Sales"."Order Lines" ("Id" int PRIMARY KEY, "Item" text);
		CREATE TABLE "a.b" (k text PRIMARY KEY);
		INSERT INTO "Sales"."Order Lines" VALUES (1, 'x');
		INSERT INTO "a.b" VALUES ('it''s');
	`)
	s := openSource(t, url, map[string]string{"tables": `"Sales"."Order Lines","a.b"`}, nil)
	recs := readN(t, s, 2)
	pgtest.Exec(t, conn, `UPDATE "Sales"."Order Lines" SET "Item" = 'y'`)
	pgtest.Exec(t, conn, `DELETE FROM "a.b"`)
	recs = append(recs, readN(t, s, 2)...)
	var got []string
	for _, r := range recs {
		got = append(got, fmt.Sprint(r.Operation, " ", r.Metadata[sdk.MetadataCollection], " ", r.Key))
	}
	is.Equal(got, []string{ // tables in schema order, then name order: "Sales" < public
		"snapshot Sales.Order Lines map[Id:1]",
		`snapshot "a.b" map[k:it's]`,
		"update Sales.Order Lines map[Id:1]",
		`delete "a.b" map[k:it's]`,
	})

	// A restart after the first table's row reads the rest under a fresh
	// snapshot, where the second table's row is gone and the first's
	// updated (so neither is read: both come as changes), then every
	// change, under the positions it had.
	ackAll(t, s, recs[:1])
	is.NoErr(s.Teardown(t.Context()))
	s = openSource(t, url, map[string]string{"tables": `"Sales"."Order Lines","a.b"`}, recs[0].Position)
	again := readN(t, s, 2)
	for i, r := range again {
		want, err := parsePosition(recs[2+i].Position)
		is.NoErr(err)
		got, err := parsePosition(r.Position)
		is.NoErr(err)
		is.Equal(got.LSN, want.LSN)
		is.Equal(got.Index, want.Index)
		is.Equal(r.Position, recs[2+i].Position)
		is.Equal(r.Operation, recs[2+i].Operation)
	}
	nothingMore(t, s)
}
