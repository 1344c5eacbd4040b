package main

import (
	"context"
	"strings"
	"testing"

	"github.com/connkit/connkit/internal/pgtest"
	"github.com/jackc/pgx/v5"
	"github.com/matryer/is"
)

// A cell counts its own destination's connections: those under the
// destination's application_name, in the cell's database, opened since
// the cell began; not an earlier cell's that is still open, nor another
// database's, nor another application's.
func TestConnCounterCountsTheCellsOwn(t *testing.T) {
	is := is.New(t)
	ctx := t.Context()
	server := pgtest.StartFor(t)
	url, conn := server.Database(t, "")
	otherURL, _ := server.Database(t, "")
	connect := func(url string) {
		t.Helper()
		c, err := pgx.Connect(ctx, url)
		is.NoErr(err)
		t.Cleanup(func() { c.Close(context.Background()) })
	}
	named := "&application_name=" + destinationApp

	connect(url + named) // an earlier cell's, not yet gone
	counter, err := startCounting(ctx, conn)
	is.NoErr(err)
	got, err := counter.count(ctx)
	is.NoErr(err)
	is.Equal(got, destinationConns{n: 0, ok: true}) // none of the cell's yet

	connect(url + named)
	connect(url + named)
	connect(otherURL + named)                                  // another database's
	connect(url + "&application_name=connkit-postgres-source") // another application's
	connect(url)                                               // unnamed, as the incumbent's
	got, err = counter.count(ctx)
	is.NoErr(err)
	is.Equal(got, destinationConns{n: 2, ok: true})

	var none *connCounter // a pipeline without a Postgres destination
	got, err = none.count(ctx)
	is.NoErr(err)
	is.Equal(got, destinationConns{})
	is.Equal(got.cell(), "–")
	is.Equal(destinationConns{ok: true}.cell(), "")
	is.Equal(destinationConns{n: 2, ok: true}.cell(), "2")
}

// The replicate report gives the destination's connections at the end of
// each phase: the snapshot's, and the changes', which count those the
// snapshot opened too (the pool keeps them).
func TestReplicateReportDestinationConnections(t *testing.T) {
	is := is.New(t)
	phase := func(conns destinationConns) window {
		return window{records: 1000, elapsed: 1, hist: histogram{count: 1000, sum: 10}, conns: conns}
	}
	cells := []*replicateCell{
		{engine: "v2", plugin: plugin{name: "connkit"}, snapshot: phase(destinationConns{n: 3, ok: true}), changes: phase(destinationConns{n: 5, ok: true})},
		{engine: "v2", plugin: plugin{name: "incumbent"}, snapshot: phase(destinationConns{ok: true}), changes: phase(destinationConns{ok: true})},
	}
	report := replicateReport("Conduit v0.14.0", cells, []string{"connkit", "incumbent"}, []string{"v2"}, 1000, 1000, 100)
	for _, row := range []string{
		"| v2 | snapshot | connkit | 1,000 | – | – | – | – | – | – | 3 |",
		"| v2 | changes | connkit | 1,000 | – | – | – | – | – | – | 5 |",
		"| v2 | snapshot | incumbent | 1,000 | – | – | – | – | – | – |  |",
		"| v2 | changes | incumbent | 1,000 | – | – | – | – | – | – |  |",
	} {
		is.True(strings.Contains(report, row+"\n")) // the row, its last column the connections
	}
}
