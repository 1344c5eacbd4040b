package e2e

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// dlqTable is the table of TestConduitDeadLetterQueue: a NOT NULL column,
// int, smallint, varchar(10) and numeric columns, a check constraint and a
// primary key, so that a record can be bad in many ways.
const dlqTable = `CREATE TABLE items (
	id    int PRIMARY KEY,
	name  text NOT NULL,
	qty   int,
	code  varchar(10),
	small smallint,
	price numeric CHECK (price >= 0)
)`

// dlqBad are the bad records of TestConduitDeadLetterQueue, by id, each
// with what it does wrong and the words the database's reason for it must
// contain, in the dead-letter queue's entry for that record and no other.
var dlqBad = map[int]struct {
	change func(after map[string]any)
	reason string
}{
	3:  {func(a map[string]any) { a["qty"] = "abc" }, `invalid input syntax for type integer: "abc"`},
	5:  {func(a map[string]any) { a["code"] = strings.Repeat("x", 50) }, `value too long for type character varying(10)`},
	8:  {func(a map[string]any) { delete(a, "name") }, `null value in column "name"`},
	11: {func(a map[string]any) { a["price"] = -1 }, `violates check constraint "items_price_check"`},
	14: {func(a map[string]any) { a["qty"] = 2.5 }, `"2.5"`},
	17: {func(a map[string]any) { a["small"] = 70000 }, `out of range for type smallint`},
	20: {func(a map[string]any) { a["name"] = "nul\x00byte" }, `invalid byte sequence for encoding "UTF8": 0x00`},
	22: {func(a map[string]any) { a["id"] = nil }, `null value in column "id"`},
}

const dlqRecords = 23

// dlqRows selects the rows of items, in id order, one string each.
const dlqRows = `SELECT concat_ws('|', id, coalesce(name, '<null>'), coalesce(qty::text, '<null>'), coalesce(code, '<null>'), coalesce(small::text, '<null>'), coalesce(price::text, '<null>')) FROM items ORDER BY id`

// dlqSourceFile writes the source's file: records 1 to 23 as jsonl lines,
// each with its own position (r01…), which the source keeps in the
// metadata as jsonl.position, so that a DLQ entry names its record even
// when the record has no id.
func dlqSourceFile(t *testing.T) (path string, afters map[string]string) {
	t.Helper()
	afters = map[string]string{}
	var records []map[string]any
	for id := 1; id <= dlqRecords; id++ {
		after := map[string]any{
			"id": id, "name": fmt.Sprintf("item-%d", id), "qty": id * 10,
			"code": fmt.Sprintf("c%d", id), "small": id, "price": float64(id) + 0.5,
		}
		if bad, ok := dlqBad[id]; ok {
			bad.change(after)
			j, err := json.Marshal(after)
			if err != nil {
				t.Fatal(err)
			}
			afters[fmt.Sprintf("r%02d", id)] = string(j)
		}
		records = append(records, map[string]any{
			"position":  []byte(fmt.Sprintf("r%02d", id)),
			"operation": "create",
			"key":       map[string]any{"structured": map[string]any{"id": after["id"]}},
			"after":     map[string]any{"structured": after},
		})
	}
	return jsonlFile(t, records), afters
}

// dlqEntry is what the dead-letter queue holds for a record: its position
// in the source's file (r01…), the position the source read it at (its
// offset), the error it was nacked with, and the record itself, as Conduit
// puts it in the DLQ record's payload, without what differs from run to
// run (read times, Conduit's ids).
type dlqEntry struct {
	Ref, Position, Error string
	After, Record        string
}

// readDLQ reads the entries of the dead-letter queue's file in order.
func readDLQ(t *testing.T, path string) []dlqEntry {
	t.Helper()
	var out []dlqEntry
	for _, l := range readJSONLines[dlqLine](t, path) {
		rec := l.After.Structured
		md, _ := rec["metadata"].(map[string]any)
		ref, _ := md["jsonl.position"].(string)
		for k := range md {
			if k != "jsonl.position" {
				delete(md, k)
			}
		}
		var pos []byte // the offset, as bytes: base64 in JSON
		if p, ok := rec["position"].(string); ok {
			pos, _ = base64.StdEncoding.DecodeString(p)
		}
		payload, _ := rec["payload"].(map[string]any)
		after, err := json.Marshal(payload["after"])
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, dlqEntry{Ref: ref, Position: string(pos), After: string(after), Error: l.Metadata["conduit.dlq.nack.error"], Record: string(b)})
	}
	return out
}

// TestConduitDeadLetterQueue runs a jsonl file of 23 records, 8 of them
// bad each in its own way for the table, into connkit's Postgres
// destination in real Conduit, with a dead-letter queue (a jsonl file)
// that tolerates them, on both engines, unbatched and batched. The table
// must hold exactly the 15 good rows and the queue exactly the 8 bad
// records, each with its own database reason: a batch's failure is never
// blamed on the wrong record, and batching changes nothing. Both engines
// have a dead-letter queue with the same window and the same entry (the
// v2 engine's is pkg/lifecycle-poc/funnel/dlq.go in Conduit v0.14.0): the
// failed record as a structured payload, the nack's error in the metadata
// as conduit.dlq.nack.error.
func TestConduitDeadLetterQueue(t *testing.T) {
	var wantRows []string
	var wantRefs []string
	for id := 1; id <= dlqRecords; id++ {
		if _, bad := dlqBad[id]; bad {
			wantRefs = append(wantRefs, fmt.Sprintf("r%02d", id))
			continue
		}
		wantRows = append(wantRows, fmt.Sprintf("%d|item-%d|%d|c%d|%d|%d.5", id, id, id*10, id, id, id))
	}
	// The source sends structured records as they are, not encoded as
	// Avro (its default, with the schema in Conduit's schema service), so
	// that the dead-letter queue, which holds records as Conduit got them
	// from the source, can be read here and compared.
	noSchemas := map[string]string{"sdk.schema.extract.payload.enabled": "false", "sdk.schema.extract.key.enabled": "false"}
	jsonl := binary("connkit-jsonl")
	for _, engine := range engines {
		t.Run(engine.name, func(t *testing.T) {
			var first []dlqEntry // the unbatched run's queue
			// Batched, the source's batches (what the v2 engine sends as
			// one message) and the destination's Writes hold several
			// records, good and bad together.
			for _, batch := range []struct {
				name     string
				settings map[string]string
			}{
				{"unbatched", nil},
				{"batched", map[string]string{"sdk.batch.size": "10", "sdk.batch.delay": "100ms"}},
			} {
				t.Run(batch.name, func(t *testing.T) {
					is := is.New(t)
					url, _ := pg.Database(t, dlqTable)
					src, afters := dlqSourceFile(t)
					dlq := filepath.Join(t.TempDir(), "dlq.jsonl")
					pipeline := pipelineYAML("standalone:jsonl", merge(map[string]string{"path": src, "poll": "50ms"}, noSchemas, batch.settings),
						"standalone:postgres", merge(map[string]string{"url": url, "table": "items", "key": "id"}, batch.settings)) +
						deadLetterQueue(dlq, 30, 10)
					c := startConduitWith(t, pipeline, []string{jsonl}, engine.flags...)
					c.waitForPipelineAcked("e2e", dlqRecords)
					c.checkRunning("e2e")
					c.stop()

					is.Equal(column(t, url, dlqRows), wantRows) // exactly the good rows, as they were sent

					entries := readDLQ(t, dlq)
					var refs, positions []string
					for _, e := range entries {
						refs = append(refs, e.Ref)
						positions = append(positions, e.Position)
					}
					is.Equal(refs, wantRefs) // exactly the bad records, in order
					for _, e := range entries {
						// The record as it was read, structured (see
						// noSchemas), and its error, naming it once.
						is.Equal(e.After, afters[e.Ref])
						if !strings.HasPrefix(e.Error, fmt.Sprintf("record at position %q: table items: ", e.Position)) || strings.Count(e.Error, "record at position") != 1 {
							t.Errorf("DLQ entry of %s: error %q does not name its record once", e.Ref, e.Error)
						}
						var id int
						fmt.Sscanf(e.Ref, "r%d", &id)
						if !strings.Contains(e.Error, dlqBad[id].reason) {
							t.Errorf("DLQ entry of %s: error %q does not name its reason %q", e.Ref, e.Error, dlqBad[id].reason)
						}
						for other, bad := range dlqBad {
							if other != id && bad.reason != dlqBad[id].reason && strings.Contains(e.Error, bad.reason) {
								t.Errorf("DLQ entry of %s: error %q names record %d's reason %q", e.Ref, e.Error, other, bad.reason)
							}
						}
					}
					if first == nil {
						first = entries
					} else if !slices.Equal(entries, first) {
						t.Errorf("batched and unbatched queues differ:\nunbatched: %q\nbatched:   %q", first, entries)
					}
					// What Conduit logs at warn and above is the destination
					// saying, once per bad record, which one it did not write.
					var logged []string
					for _, line := range c.Problems() {
						var entry struct{ Message, Position string }
						if json.Unmarshal([]byte(line), &entry) != nil || entry.Message != "record not written" {
							t.Errorf("Conduit logged: %s", line)
							continue
						}
						logged = append(logged, entry.Position)
					}
					is.Equal(logged, positions)
				})
			}
		})
	}
}
