package pgtest

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/matryer/is"
)

func TestServer(t *testing.T) {
	is := is.New(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	s, err := Start()
	is.NoErr(err)
	defer func() { is.NoErr(s.Stop()) }()

	url, err := s.CreateDatabase(ctx, "some_test")
	is.NoErr(err)
	conn, err := pgx.Connect(ctx, url)
	is.NoErr(err)
	var db, walLevel string
	is.NoErr(conn.QueryRow(ctx, "SELECT current_database(), current_setting('wal_level')").Scan(&db, &walLevel))
	is.Equal(db, "some_test")
	is.Equal(walLevel, "logical") // ready for logical replication

	is.NoErr(s.Restart())
	is.True(conn.Ping(ctx) != nil) // connections are dropped
	is.NoErr(s.WaitReady(ctx))
}
