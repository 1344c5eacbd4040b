package postgres

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/connkit/connkit/internal/pgtest"
	"github.com/connkit/connkit/sdk"
	"github.com/matryer/is"
)

// TestOpenWaitsForTheServer opens each role while the server is down,
// then starting: Open waits and succeeds.
func TestOpenWaitsForTheServer(t *testing.T) {
	is := is.New(t)
	srv := pgtest.StartFor(t, "synchronous_commit=on")
	url, conn := srv.Database(t, `CREATE TABLE items (id int PRIMARY KEY)`)
	conn.Close(t.Context())
	for _, role := range []string{"destination", "source"} {
		crashed := make(chan error, 1)
		go func() { crashed <- srv.Crash(2 * time.Second) }()
		time.Sleep(300 * time.Millisecond) // the server is down
		var err error
		switch role {
		case "destination":
			var d sdk.Destination
			d, err = Connector.Destination.New(map[string]string{"url": url, "table": "items"})
			is.NoErr(err)
			err = d.Open(t.Context())
			d.Teardown(context.Background())
		case "source":
			var s sdk.Source
			s, err = Connector.Source.New(map[string]string{"url": url, "tables": "items", "snapshot.mode": "never"})
			is.NoErr(err)
			err = s.Open(t.Context(), nil)
			s.Teardown(context.Background())
		}
		if err != nil {
			t.Errorf("%s: %v", role, err)
		}
		is.NoErr(<-crashed)
	}
}

// TestReconnectTimeout: a database that stays away fails each role's Open
// once reconnect.timeout has passed, with an error naming the parameter
// and the last reason; with 0, at once.
func TestReconnectTimeout(t *testing.T) {
	is := is.New(t)
	const refused = "postgres://postgres@127.0.0.1:1/postgres?sslmode=disable"
	for _, c := range []struct {
		timeout  string
		least    time.Duration
		gaveUp   bool
		settings map[string]string
	}{
		{"500ms", 500 * time.Millisecond, true, nil},
		{"0", 0, false, nil},
	} {
		for _, role := range []string{"destination", "source"} {
			settings := map[string]string{"url": refused, "reconnect.timeout": c.timeout}
			maps.Copy(settings, c.settings)
			began := time.Now()
			err := openRole(t, role, settings)
			took := time.Since(began)
			is.True(err != nil)
			t.Logf("%s, reconnect.timeout %s: %v after %s", role, c.timeout, err, took)
			is.True(took >= c.least)
			is.Equal(strings.Contains(err.Error(), `(parameter "reconnect.timeout")`), c.gaveUp)
			is.True(strings.Contains(err.Error(), "connection refused"))
		}
	}
}

// openRole opens the connector's role with settings (a source reads
// items), and returns Open's error.
func openRole(t *testing.T, role string, settings map[string]string) error {
	switch role {
	case "destination":
		d, err := Connector.Destination.New(settings)
		if err != nil {
			t.Fatal(err)
		}
		return d.Open(t.Context())
	default:
		settings["tables"] = "items"
		s, err := Connector.Source.New(settings)
		if err != nil {
			t.Fatal(err)
		}
		return s.Open(t.Context(), nil)
	}
}

// A Write that meets a lost connection waits for it up to the timeout,
// then fails for good: not retryable.
func TestWriteReconnectTimeout(t *testing.T) {
	is := is.New(t)
	srv := pgtest.StartFor(t, "synchronous_commit=on")
	url, conn := srv.Database(t, `CREATE TABLE items (id int PRIMARY KEY)`)
	conn.Close(t.Context())
	d, err := Connector.Destination.New(map[string]string{"url": url, "table": "items", "reconnect.timeout": "1s"})
	is.NoErr(err)
	is.NoErr(d.Open(t.Context()))
	defer d.Teardown(context.Background())
	rec := func(id int) []sdk.Record {
		return []sdk.Record{{Position: sdk.Position(fmt.Sprint(id)), Operation: sdk.OperationCreate, Key: sdk.StructuredData{"id": id}, Payload: sdk.Change{After: sdk.StructuredData{"id": id}}}}
	}
	_, err = d.Write(t.Context(), rec(1))
	is.NoErr(err)
	crashed := make(chan error, 1)
	go func() { crashed <- srv.Crash(4 * time.Second) }()
	time.Sleep(500 * time.Millisecond)
	began := time.Now()
	n, err := d.Write(t.Context(), rec(2))
	took := time.Since(began)
	t.Logf("Write: %v after %s", err, took)
	is.Equal(n, 0)
	is.True(err != nil)
	is.True(!sdk.IsRetryable(err))
	is.True(strings.Contains(err.Error(), `(parameter "reconnect.timeout")`))
	is.True(took < 3*time.Second)
	is.NoErr(<-crashed)
}
