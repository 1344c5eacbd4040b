package source

import (
	"testing"
	"time"

	"github.com/connkit/connkit/internal/pgtest"
	"github.com/connkit/connkit/sdk"
	"github.com/matryer/is"
)

func TestSourceChanges(t *testing.T) {
	is := is.New(t)
	url, conn := sourceDB(t, `
		CREATE TABLE a (id int PRIMARY KEY, v text);
		CREATE TABLE b (k1 text, k2 int, v int, PRIMARY KEY (k1, k2));
		ALTER TABLE b REPLICA IDENTITY FULL;
		CREATE TABLE other (id int PRIMARY KEY);
		INSERT INTO a VALUES (1, 'snap');
	`)
	s := openSource(t, url, map[string]string{"tables": "a,b"}, nil)
	snap := readN(t, s, 1)
	is.Equal(snap[0].Operation, sdk.OperationSnapshot)

	pgtest.Exec(t, conn, `INSERT INTO a VALUES (2, 'two'), (3, 'three')`)
	pgtest.Exec(t, conn, `INSERT INTO other VALUES (1)`) // not a table of the source
	pgtest.Exec(t, conn, `BEGIN; INSERT INTO b VALUES ('x', 1, 10); UPDATE a SET v = 'TWO' WHERE id = 2; UPDATE b SET v = 11; DELETE FROM a WHERE id = 3; DELETE FROM b; COMMIT`)
	pgtest.Exec(t, conn, `UPDATE a SET id = 4 WHERE id = 1`)
	recs := readN(t, s, 8)
	nothingMore(t, s)

	type change struct {
		op                 sdk.Operation
		collection         string
		key, before, after sdk.Data
	}
	var got []change
	for _, r := range recs {
		got = append(got, change{r.Operation, r.Metadata[sdk.MetadataCollection], r.Key, r.Payload.Before, r.Payload.After})
	}
	sd := func(kv ...any) sdk.StructuredData {
		d := sdk.StructuredData{}
		for i := 0; i < len(kv); i += 2 {
			d[kv[i].(string)] = kv[i+1]
		}
		return d
	}
	is.Equal(got, []change{
		{sdk.OperationCreate, "a", sd("id", int64(2)), nil, sd("id", int64(2), "v", "two")},
		{sdk.OperationCreate, "a", sd("id", int64(3)), nil, sd("id", int64(3), "v", "three")},
		{sdk.OperationCreate, "b", sd("k1", "x", "k2", int64(1)), nil, sd("k1", "x", "k2", int64(1), "v", int64(10))},
		{sdk.OperationUpdate, "a", sd("id", int64(2)), nil, sd("id", int64(2), "v", "TWO")}, // default replica identity: no before-image
		{sdk.OperationUpdate, "b", sd("k1", "x", "k2", int64(1)), sd("k1", "x", "k2", int64(1), "v", int64(10)), sd("k1", "x", "k2", int64(1), "v", int64(11))},
		{sdk.OperationDelete, "a", sd("id", int64(3)), nil, nil},
		{sdk.OperationDelete, "b", sd("k1", "x", "k2", int64(1)), sd("k1", "x", "k2", int64(1), "v", int64(11)), nil},
		{sdk.OperationUpdate, "a", sd("id", int64(4)), sd("id", int64(1)), sd("id", int64(4), "v", "snap")}, // a changed key: the old one
	})

	// Acked changes are confirmed to the server.
	ackAll(t, s, append(snap, recs...))
	last, err := parsePosition(recs[len(recs)-1].Position)
	is.NoErr(err)
	waitConfirmed(t, conn, last.lsn().String())
}

func TestSourceStalledReader(t *testing.T) {
	is := is.New(t)
	url, conn := sourceDB(t, `CREATE TABLE a (id int PRIMARY KEY)`)
	// The server drops a replication connection it has not heard from for
	// wal_sender_timeout; the source must keep talking while nobody reads.
	defer func(d time.Duration) { statusInterval = d }(statusInterval)
	statusInterval = 100 * time.Millisecond
	url += "&options=-c%20wal_sender_timeout%3D1s"
	s := openSource(t, url, map[string]string{"tables": "a", "snapshot.mode": "never", "snapshot.fetchSize": "10"}, nil)
	// Far more changes than the source holds, with nobody reading, for
	// several times wal_sender_timeout.
	pgtest.Exec(t, conn, `INSERT INTO a SELECT generate_series(1, 5000)`)
	for i := range 50 {
		pgtest.Exec(t, conn, `INSERT INTO a VALUES ($1)`, 10000+i)
	}
	time.Sleep(3 * time.Second)
	recs := readN(t, s, 5050)
	is.Equal(recs[0].Key, sdk.StructuredData{"id": int64(1)})
	is.Equal(recs[5049].Key, sdk.StructuredData{"id": int64(10049)})
	nothingMore(t, s)
}
