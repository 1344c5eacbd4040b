//go:build linux

package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/connkit/connkit/internal/pgtest"
	"github.com/jackc/pgx/v5"
)

// TestPostgresReconnects runs standalone:postgres → standalone:postgres in
// real Conduit, both engines, the source's and the destination's databases
// on two servers of their own, while rows are inserted at about 1,000 a
// second. It crashes the source's server six times (pg_ctl -m immediate,
// down from half a second to 3 s), then the destination's six times: both
// connectors reconnect by themselves, so the pipeline is never stopped or
// restarted, and the copy, exactly once into a keyless table, has every
// row once. How long after the last crash of each server the copy caught
// up with what the source had then is logged.
func TestPostgresReconnects(t *testing.T) {
	conduitBin(t) // skips the test before the servers start, if there is no Conduit
	servers := map[string]*pgtest.Server{}
	for _, side := range []string{"source", "destination"} {
		// Every commit survives a crash: the test counts on the rows it
		// was told are committed.
		s, err := pgtest.StartWith("synchronous_commit=on")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Stop() })
		servers[side] = s
	}
	for _, engine := range engines {
		t.Run(engine.name, func(t *testing.T) {
			from, src := servers["source"].Database(t, `CREATE TABLE items (id int PRIMARY KEY, n bigint)`)
			src.Close(t.Context())
			to, dst := servers["destination"].Database(t, `CREATE TABLE items (id int, n bigint)`)
			dst.Close(t.Context())
			pipeline := pipelineYAML("standalone:postgres", map[string]string{
				"url": from, "tables": "items", "slot.name": dbName(from),
			}, "standalone:postgres", map[string]string{
				"url": to, "exactlyOnce.enabled": "true",
			}) + "    processors:\n" + dropKey
			c := startConduit(t, pipeline, engine.flags...)
			ins := pgtest.InsertAcrossCrashes(t, from, `INSERT INTO items SELECT i, i FROM generate_series($1::int, $1::int + 9) i`)
			waitForCopy(t, c, from, to, time.Minute)

			for _, side := range []string{"source", "destination"} {
				for i := range 6 {
					time.Sleep(time.Duration(500+rand.N(1000)) * time.Millisecond)
					down := time.Duration(500+rand.N(2500)) * time.Millisecond
					if err := servers[side].Crash(down); err != nil {
						t.Fatal(err)
					}
					t.Logf("%s's server crashed (%d), down %s", side, i+1, down.Round(time.Millisecond))
				}
				// Caught up: the copy has every row the source has once a
				// row inserted after the server came back is there.
				back := time.Now()
				var before, upTo int64
				for before == 0 {
					before = maxID(t, from)
				}
				for upTo <= before {
					if upTo = maxID(t, from); time.Since(back) > time.Minute {
						t.Fatal("no row inserted for a minute after the server came back")
					}
				}
				want := count(t, from, fmt.Sprintf(`SELECT count(*) FROM items WHERE id <= %d`, upTo))
				waitForCount(t, c, to, fmt.Sprintf(`SELECT count(DISTINCT id) FROM items WHERE id <= %d`, upTo), want, time.Minute)
				t.Logf("%s's server crashed 6 times: the copy caught up %.1f s after its last restart", side, time.Since(back).Seconds())
			}

			ins.Stop()
			waitForCopy(t, c, from, to, time.Minute)
			restarts := regexp.MustCompile(`restarting with backoff|pipeline stopped|recovering pipeline|pipeline worker stopped`)
			if lines := matching(c.Log(), restarts); len(lines) > 0 {
				t.Errorf("Conduit stopped or restarted the pipeline:\n%s", strings.Join(lines, "\n"))
			}
			c.checkRunning("e2e")
			for _, l := range matching(c.Log(), regexp.MustCompile(`reconnected to PostgreSQL`)) {
				t.Log(l)
			}
			c.stop()
			c.checkProblems("record key is not structured", "lost the connection to PostgreSQL", "cannot connect to PostgreSQL", "cannot measure the replication lag")

			const ids = `SELECT id::text FROM items ORDER BY id::text COLLATE "C"` // as slices.BinarySearch orders them
			srcIDs, dstIDs := column(t, from, ids), column(t, to, ids)
			missing, extra := 0, len(dstIDs)
			for _, id := range srcIDs {
				if _, ok := slices.BinarySearch(dstIDs, id); !ok {
					missing++
				}
			}
			extra -= len(srcIDs) - missing
			t.Logf("%d rows in the source, %d in the copy: %d lost, %d duplicated or extra", len(srcIDs), len(dstIDs), missing, extra)
			if missing != 0 || extra != 0 {
				t.Errorf("%d rows lost, %d duplicated or extra", missing, extra)
			}
		})
	}
}

// maxID is the greatest id in items at url, 0 if the server does not
// answer yet.
func maxID(t *testing.T, url string) int64 {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		time.Sleep(50 * time.Millisecond)
		return 0
	}
	defer conn.Close(context.Background())
	var n *int64
	if err := conn.QueryRow(t.Context(), `SELECT max(id) FROM items`).Scan(&n); err != nil || n == nil {
		time.Sleep(50 * time.Millisecond)
		return 0
	}
	return *n
}

// waitForCount waits until query, a count at url, reaches want, failing
// if the pipeline stops or it takes longer than limit (a guard against a
// copy that never catches up, not a measure: the time is logged). The
// destination's server may be down at times: a count that fails is
// asked again.
func waitForCount(t *testing.T, c *conduit, url, query string, want int64, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	var got int64
	for {
		if conn, err := pgx.Connect(t.Context(), url); err == nil {
			_ = conn.QueryRow(t.Context(), query).Scan(&got)
			conn.Close(context.Background())
		}
		if got >= want {
			return
		}
		if status, errText := c.PipelineState("e2e"); status == "STATUS_DEGRADED" {
			t.Fatalf("pipeline degraded at %d of %d: %s", got, want, errText)
		}
		select {
		case <-c.Done():
			t.Fatalf("Conduit exited (%v) at %d of %d", c.Err(), got, want)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d after %s (%s)", got, want, limit, query)
		}
	}
}

// waitForCopy waits until the copy at to has as many distinct ids as the
// source at from.
func waitForCopy(t *testing.T, c *conduit, from, to string, limit time.Duration) {
	t.Helper()
	var want int64
	for want == 0 {
		if maxID(t, from) > 0 {
			want = count(t, from, `SELECT count(*) FROM items`)
		}
	}
	waitForCount(t, c, to, `SELECT count(DISTINCT id) FROM items`, want, limit)
}

// matching returns the lines of log that match re.
func matching(log string, re *regexp.Regexp) []string {
	var out []string
	for line := range strings.SplitSeq(log, "\n") {
		if re.MatchString(line) {
			out = append(out, line)
		}
	}
	return out
}
