package main

import (
	"context"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// destinationApp is the application_name connkit's Postgres destination
// gives its connections, unless its URL sets one.
const destinationApp = "connkit-postgres-destination"

// destinationConnsNote says what the destination connections column of a
// resources table holds.
const destinationConnsNote = "Destination connections are the Postgres destination's connections open at the window's end, counted in pg_stat_activity under its application_name (" + destinationApp + ") among those opened since the cell began: its pool opens one for each Write in flight and keeps it 30 minutes idle, so this is the most Writes it had in flight together so far; blank for a plugin that does not name its connections (the incumbent's), \"–\" where there is no Postgres destination."

// destinationConns is what a window saw of a Postgres destination's
// connections: how many were open under destinationApp at its end. ok is
// false where they were not counted, a pipeline without a Postgres
// destination; a destination that does not name its connections has none.
type destinationConns struct {
	n  int64
	ok bool
}

// cell formats the count for a table: "–" where none were counted, blank
// where the destination named none.
func (d destinationConns) cell() string {
	switch {
	case !d.ok:
		return "–"
	case d.n == 0:
		return ""
	}
	return strconv.FormatInt(d.n, 10)
}

// csv formats the count for a CSV file: empty where none were counted or
// the destination named none.
func (d destinationConns) csv() string {
	if d.n == 0 {
		return ""
	}
	return strconv.FormatInt(d.n, 10)
}

// connCounter counts a cell's destination connections, on conn, the
// bench's connection to the database the destination writes into: those
// open there under destinationApp whose backends started since, the
// server's clock when the cell began. Cells share the database, one after
// the other, and a backend may outlive its client for a moment; the
// previous cell's plugins have been killed before since is read, so a
// connection opened after it is the cell's own.
type connCounter struct {
	conn  *pgx.Conn
	since time.Time
}

// startCounting returns a counter of the connections opened from now on
// (see connCounter); call it once the previous cell's plugins are gone and
// before the cell starts its own.
func startCounting(ctx context.Context, conn *pgx.Conn) (*connCounter, error) {
	c := &connCounter{conn: conn}
	if err := conn.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&c.since); err != nil {
		return nil, err
	}
	return c, nil
}

// count counts the destination's connections open now; a nil counter
// counts none (not ok).
func (c *connCounter) count(ctx context.Context) (destinationConns, error) {
	if c == nil {
		return destinationConns{}, nil
	}
	var n int64
	err := c.conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
		WHERE application_name = $1 AND datname = current_database() AND backend_start >= $2`, destinationApp, c.since).Scan(&n)
	if err != nil {
		return destinationConns{}, err
	}
	return destinationConns{n: n, ok: true}, nil
}
