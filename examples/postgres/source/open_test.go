package source

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/connkit/connkit/internal/leakcheck"
	"github.com/connkit/connkit/internal/pgtest"
	"github.com/connkit/connkit/sdk"
	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/matryer/is"
)

func TestSourceErrors(t *testing.T) {
	is := is.New(t)
	url, conn := sourceDB(t, `
		CREATE TABLE keyless (v int);
		CREATE TABLE a (id int PRIMARY KEY);
		CREATE ROLE plain LOGIN;
		CREATE ROLE replicator LOGIN REPLICATION;
	`)
	t.Cleanup(func() {
		conn.Exec(context.Background(), `DROP OWNED BY plain, replicator; DROP ROLE plain; DROP ROLE replicator`)
	})
	as := func(role string) string { return strings.Replace(url, "postgres@", role+"@", 1) }
	for _, tt := range []struct {
		name, url, tables, want string
	}{
		{"no primary key", url, "keyless", "table public.keyless has no primary key and REPLICA IDENTITY DEFAULT"},
		{"missing table", url, "nope", "table nope does not exist"},
		{"empty schema", url, "nothing.*", `matches no table`},
		{"no replication attribute", as("plain"), "a", `role "plain" may not use logical replication: ALTER ROLE plain WITH REPLICATION`},
		{"no select privilege", as("replicator"), "a", "may not SELECT from table public.a"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tryOpenSource(t, tt.url, map[string]string{"tables": tt.tables}, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got error %v, want one containing %q", err, tt.want)
			}
		})
	}

	t.Run("bad position", func(t *testing.T) {
		_, err := tryOpenSource(t, url, map[string]string{"tables": "a"}, sdk.Position("42"))
		is.True(err != nil)
		is.True(strings.Contains(err.Error(), "not a postgres source position"))
	})
}

// A slot that another reader holds, or that belongs to another database,
// fails Open with an error that says who has it and what to do.
func TestSourceSlotErrors(t *testing.T) {
	is := is.New(t)
	url, conn := sourceDB(t, `CREATE TABLE a (id int PRIMARY KEY)`)
	t.Run("slot in use", func(t *testing.T) {
		openSource(t, url, map[string]string{"tables": "a"}, nil)
		defer func(d time.Duration) { slotWait = d }(slotWait)
		slotWait = 200 * time.Millisecond
		_, err := tryOpenSource(t, url, map[string]string{"tables": "a"}, nil)
		is.True(err != nil)
		// Who holds it, and how to end it.
		is.True(strings.Contains(err.Error(), "is held by server process "))
		is.True(strings.Contains(err.Error(), "user postgres, from 127.0.0.1:"))
		is.True(strings.Contains(err.Error(), "end its connection with SELECT pg_terminate_backend("))
	})

	t.Run("slot streamed by another reader", func(t *testing.T) {
		// A reader that is not a source (pg_recvlogical, another tool)
		// streams from the slot: the server names its process.
		openSource(t, url, map[string]string{"tables": "a", "slot.name": "busy"}, nil).Teardown(t.Context())
		waitSlotIdle(t, conn, "busy") // the server process that streamed to the source ends soon after
		cfg, err := pgconn.ParseConfig(url)
		is.NoErr(err)
		cfg.RuntimeParams["replication"] = "database"
		cfg.RuntimeParams["application_name"] = "other-reader"
		repl, err := pgconn.ConnectConfig(t.Context(), cfg)
		is.NoErr(err)
		defer repl.Close(context.Background())
		is.NoErr(pglogrepl.StartReplication(t.Context(), repl, "busy", 0, pglogrepl.StartReplicationOptions{
			Mode: pglogrepl.LogicalReplication, PluginArgs: []string{"proto_version '1'", "publication_names 'connkit'"},
		}))
		defer func(d time.Duration) { slotWait = d }(slotWait)
		slotWait = 200 * time.Millisecond
		_, err = tryOpenSource(t, url, map[string]string{"tables": "a", "slot.name": "busy"}, nil)
		is.True(err != nil)
		is.True(strings.Contains(err.Error(), "replication slot busy is held by server process "))
		is.True(strings.Contains(err.Error(), "(application other-reader, user postgres, from 127.0.0.1:"))
		is.True(strings.Contains(err.Error(), "state streaming"))
		is.True(strings.Contains(err.Error(), "SELECT pg_terminate_backend("))
	})

	t.Run("slot of another database", func(t *testing.T) {
		other, _ := sourceDB(t, `CREATE TABLE a (id int PRIMARY KEY)`)
		openSource(t, other, map[string]string{"tables": "a", "slot.name": "shared"}, nil).Teardown(t.Context())
		_, err := tryOpenSource(t, url, map[string]string{"tables": "a", "slot.name": "shared"}, nil)
		is.True(err != nil)
		is.True(strings.Contains(err.Error(), "replication slot shared belongs to another database"))
	})
}

func TestSourceNeedsLogicalWAL(t *testing.T) {
	leakcheck.Check(t)
	srv, err := pgtest.StartWith("wal_level=replica")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	_, err = tryOpenSource(t, srv.URL, map[string]string{"tables": "*"}, nil)
	if err == nil || !strings.Contains(err.Error(), `PostgreSQL's wal_level is "replica", and the source needs logical`) {
		t.Fatalf("got %v, want an error about wal_level", err)
	}
}
