package e2e

import (
	"encoding/base64"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// TestConduitInvalidUTF8 runs raw JSON payloads, one of them with the
// bytes \xff\xfe inside a string, from a jsonl file into connkit's
// Postgres destination in real Conduit, both engines, with a dead-letter
// queue, batched so that the bad record shares its batch with good ones:
// the bad record goes to the queue, byte for byte, with an error naming
// its position and its field, and never reaches the table with U+FFFD in
// place of its bytes; every other record is written.
func TestConduitInvalidUTF8(t *testing.T) {
	const records, bad = 9, 5
	payload := func(id int) []byte {
		if id == bad {
			return []byte(`{"id":5,"name":"a` + "\xff\xfe" + `b"}`)
		}
		return fmt.Appendf(nil, `{"id":%d,"name":"item-%d é"}`, id, id)
	}
	var lines []map[string]any
	for id := 1; id <= records; id++ {
		lines = append(lines, map[string]any{
			"position":  []byte(fmt.Sprintf("r%02d", id)),
			"operation": "create",
			"after":     map[string]any{"raw": payload(id)},
		})
	}
	for _, engine := range engines {
		t.Run(engine.name, func(t *testing.T) {
			is := is.New(t)
			url, _ := pg.Database(t, `CREATE TABLE items (id int PRIMARY KEY, name text)`)
			src := jsonlFile(t, lines)
			dlq := filepath.Join(t.TempDir(), "dlq.jsonl")
			batch := map[string]string{"sdk.batch.size": "10", "sdk.batch.delay": "100ms"}
			pipeline := pipelineYAML("standalone:jsonl", merge(batch, map[string]string{"path": src, "poll": "50ms"}),
				"standalone:postgres", merge(batch, map[string]string{"url": url, "table": "items", "key": "id"})) +
				deadLetterQueue(dlq, 10, 5)
			c := startConduitWith(t, pipeline, []string{binary("connkit-jsonl")}, engine.flags...)
			c.waitForAcked(records)
			c.checkRunning("e2e")
			c.stop()
			c.checkProblems("record not written")

			var want []string
			for id := 1; id <= records; id++ {
				if id != bad {
					want = append(want, fmt.Sprintf("%d|item-%d é", id, id))
				}
			}
			is.Equal(column(t, url, `SELECT id || '|' || name FROM items ORDER BY id`), want) // every other record, and no U+FFFD

			entries := readDLQ(t, dlq)
			is.Equal(len(entries), 1)
			e := entries[0]
			is.Equal(e.Ref, fmt.Sprintf("r%02d", bad))
			is.Equal(e.After, strconv.Quote(base64.StdEncoding.EncodeToString(payload(bad)))) // byte for byte
			wantErr := fmt.Sprintf(`record at position %q: field "payload.after.name": its value is not valid UTF-8 text`, e.Position)
			if !strings.HasPrefix(e.Error, wantErr) {
				t.Errorf("DLQ error %q, want it to start with %q", e.Error, wantErr)
			}
		})
	}
}
