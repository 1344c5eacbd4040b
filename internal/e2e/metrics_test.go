package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/connkit/connkit/internal/metrics/metricstest"
	"github.com/jackc/pgx/v5"
	"github.com/matryer/is"
)

// TestConduitMetrics runs standalone:postgres → standalone:postgres in
// real Conduit, with both engines, both connectors serving their metrics
// at addresses of their own, and scrapes both during the run: the records
// acked are the rows copied, the snapshot's progress reaches 100%, and the
// replication lag rises under a burst the destination cannot write yet,
// then returns to 0 once it has caught up. Neither the metrics nor the
// progress lines in Conduit's log show the URL's password.
func TestConduitMetrics(t *testing.T) {
	t.Run("default engine", func(t *testing.T) { conduitMetrics(t) })
	t.Run("v2 engine", func(t *testing.T) { conduitMetrics(t, "--preview.pipeline-arch-v2") })
}

func conduitMetrics(t *testing.T, flags ...string) {
	is := is.New(t)
	const ddl = `CREATE TABLE items (id int PRIMARY KEY, name text, n bigint)`
	from, src := sourceDatabase(t, ddl+`;
		INSERT INTO items SELECT i, 'item ' || i, i FROM generate_series(1, 20000) i`)
	to, dst := sourceDatabase(t, ddl)
	const password = "s3cret-Pa55"
	from = withPassword(t, src, from, password)
	srcMetrics, dstMetrics := freeAddress(t), freeAddress(t)
	pipeline := pipelineYAML(
		"standalone:postgres", map[string]string{"url": from, "tables": "items", "slot.name": dbName(from), "snapshot.fetchSize": "2000",
			"sdk.metrics.address": srcMetrics, "sdk.metrics.logInterval": "1s"},
		"standalone:postgres", map[string]string{"url": to, "sdk.metrics.address": dstMetrics})
	c := startConduit(t, pipeline, flags...)

	c.waitForAcked(20000)
	srcL := []string{"connector_id=e2e:source", "plugin=postgres", "plugin_version=v0.1.0", "role=source"}
	dstL := []string{"connector_id=e2e:destination", "plugin=postgres", "plugin_version=v0.1.0", "role=destination"}
	await(t, srcMetrics, "the snapshot read", func(v float64) bool { return v == 1 }, "connkit_postgres_snapshot_progress_ratio", srcL...)
	await(t, srcMetrics, "the table's rows", func(v float64) bool { return v == 20000 }, "connkit_postgres_snapshot_rows_total", append(srcL, "table=public.items")...)
	copied := func() float64 { return float64(count(t, to, `SELECT count(*) FROM items`)) }
	is.Equal(copied(), 20000.0)
	await(t, dstMetrics, "the rows copied", func(v float64) bool { return v == copied() }, "connkit_records_acked_total", dstL...)
	await(t, srcMetrics, "the rows copied", func(v float64) bool { return v == copied() }, "connkit_records_acked_total", srcL...)

	// A burst while the destination's table is locked: nothing is written
	// or acknowledged, and the source falls behind.
	lock, err := dst.Begin(t.Context())
	is.NoErr(err)
	_, err = lock.Exec(t.Context(), `LOCK TABLE items IN ACCESS EXCLUSIVE MODE`)
	is.NoErr(err)
	_, err = src.Exec(t.Context(), `INSERT INTO items SELECT i, 'burst ' || i, i FROM generate_series(20001, 30000) i`)
	is.NoErr(err)
	lagBytes := await(t, srcMetrics, "above 0", func(v float64) bool { return v > 0 }, "connkit_postgres_replication_lag_bytes", srcL...)
	lagSeconds := await(t, srcMetrics, "above 0", func(v float64) bool { return v > 0 }, "connkit_postgres_replication_lag_seconds", srcL...)
	t.Logf("lag behind the locked table: %.0f bytes, %.3f s", lagBytes, lagSeconds)
	is.NoErr(lock.Rollback(t.Context()))

	c.waitForAcked(30000)
	await(t, srcMetrics, "0", func(v float64) bool { return v == 0 }, "connkit_postgres_replication_lag_bytes", srcL...)
	await(t, srcMetrics, "0", func(v float64) bool { return v == 0 }, "connkit_postgres_replication_lag_seconds", srcL...)
	is.Equal(copied(), 30000.0)
	await(t, dstMetrics, "the rows copied", func(v float64) bool { return v == copied() }, "connkit_records_acked_total", dstL...)
	await(t, dstMetrics, "the rows copied", func(v float64) bool { return v == copied() }, "connkit_postgres_rows_total", append(dstL, "operation=insert")...)

	for _, address := range []string{srcMetrics, dstMetrics} {
		got, err := metricstest.Scrape(address)
		is.NoErr(err)
		for k := range got {
			if strings.Contains(k, password) || strings.Contains(k, "postgres://") {
				t.Errorf("the metrics at %s show the URL: %s", address, k)
			}
		}
	}
	log := c.Log()
	is.True(strings.Contains(log, "source progress"))
	is.True(strings.Contains(log, "connkit_postgres_snapshot_progress_ratio") || strings.Contains(log, "postgres_snapshot_progress_ratio"))
	is.True(!strings.Contains(log, password))
	c.stop()
	c.checkProblems()
}

// await waits up to a minute for f to hold of the sample name with labels
// at address, and returns it.
func await(t *testing.T, address, what string, f func(float64) bool, name string, labels ...string) float64 {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		got, err := metricstest.Scrape(address)
		if err != nil {
			t.Fatal(err)
		}
		v, ok := got.Get(name, labels...)
		if ok && f(v) {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s at %s stayed at %v (served: %t), never %s", metricstest.Key(name, labels...), address, v, ok, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// freeAddress returns a loopback address no one listens on, for now, on a
// port below the kernel's ephemeral range where it can tell (Linux): a
// port the kernel picks for a listener on port 0 (Conduit's APIs, a
// plugin's) or a connection cannot take it before it is used. No two
// calls in a test process return the same port.
func freeAddress(t *testing.T) string {
	t.Helper()
	addressesMu.Lock()
	defer addressesMu.Unlock()
	low := 0 // the bottom of the ephemeral range; 0: unknown
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			low, _ = strconv.Atoi(f[0])
		}
	}
	if low <= 20000 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		return ln.Addr().String()
	}
	for range 100 {
		port := 20000 + rand.IntN(low-20000)
		address := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if handedOut[port] {
			continue
		}
		ln, err := net.Listen("tcp", address)
		if err != nil {
			continue
		}
		ln.Close()
		handedOut[port] = true
		return address
	}
	t.Fatalf("no free port between 20000 and %d", low)
	return ""
}

// The ports freeAddress returned.
var (
	addressesMu sync.Mutex
	handedOut   = map[int]bool{}
)

// withPassword returns url, a database conn is connected to, as a role
// of its own with password, a superuser, dropped when the test ends.
func withPassword(t *testing.T, conn *pgx.Conn, url, password string) string {
	t.Helper()
	role := "metrics_" + dbName(url)
	if _, err := conn.Exec(t.Context(), fmt.Sprintf(`CREATE ROLE %s SUPERUSER LOGIN PASSWORD '%s'`, role, password)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = conn.Exec(context.Background(), `DROP OWNED BY `+role+` CASCADE`)
		_, _ = conn.Exec(context.Background(), `DROP ROLE IF EXISTS `+role)
	})
	return strings.Replace(url, "postgres://postgres@", "postgres://"+role+":"+password+"@", 1)
}

// TestConduitMetricsAddressInUse: a connector whose metrics address
// another process holds fails to open, with an error in Conduit's log
// that names the address and the connector (Conduit then restarts the
// pipeline, which fails the same way while the address is held).
func TestConduitMetricsAddressInUse(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	address := held.Addr().String()
	c := startConduit(t, pipelineFile(10, nil, "log", map[string]string{"sdk.metrics.address": address}))
	want := `open destination: serve the metrics of connector "e2e:destination" at ` + address + `: listen tcp ` + address + `: bind: address already in use`
	deadline := time.Now().Add(time.Minute)
	for !slices.ContainsFunc(c.Problems(), func(line string) bool {
		var entry struct{ Error string }
		return json.Unmarshal([]byte(line), &entry) == nil && strings.Contains(entry.Error, want)
	}) {
		if time.Now().After(deadline) {
			t.Fatalf("Conduit did not log %q", want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
