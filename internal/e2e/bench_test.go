package e2e

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"maps"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/connkit/connkit/internal/host"
)

// pair is a generator and a log plugin built with one SDK, and the settings
// that make them comparable: 1 KiB raw payloads from a file, records logged
// at trace by a plugin logging at info, so that nothing is printed.
type pair struct {
	name                 string
	generator, log       string
	sourceBase, destBase map[string]string
}

func pairs(b *testing.B, payload string) []pair {
	ps := []pair{{
		name:       "connkit",
		generator:  binary("connkit-generator"),
		log:        binary("connkit-log"),
		sourceBase: map[string]string{"format.type": "file", "format.options.path": payload},
		destBase:   map[string]string{"level": "trace"},
	}}
	dir := os.Getenv("INCUMBENT_BIN")
	if dir == "" {
		b.Log("INCUMBENT_BIN is not set; `make bench` builds the incumbent's plugins and sets it")
		return ps
	}
	// The incumbent's schema middleware is off: it needs Conduit's schema
	// service, and raw payloads have no schema anyway.
	noSchema := map[string]string{"sdk.schema.extract.key.enabled": "false", "sdk.schema.extract.payload.enabled": "false"}
	return append(ps, pair{
		name:       "incumbent",
		generator:  filepath.Join(dir, "generator"),
		log:        filepath.Join(dir, "log"),
		sourceBase: merge(map[string]string{"format.type": "file", "format.options.path": payload}, noSchema),
		destBase:   merge(map[string]string{"level": "trace"}, noSchema),
	})
}

func merge(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		maps.Copy(out, m)
	}
	return out
}

// BenchmarkPipeline measures generator → log over the real protocol, with
// this host playing Conduit's part, for connkit's plugins and, with
// INCUMBENT_BIN set, the incumbent's, side by side in one run. Each
// iteration is one record: run with -benchtime=200000x or similar. The
// records/s metric is the end-to-end rate from the first record read to the
// last ack.
func BenchmarkPipeline(b *testing.B) {
	payload := filepath.Join(b.TempDir(), "payload")
	raw := make([]byte, 768)
	_, _ = rand.Read(raw)
	if err := os.WriteFile(payload, []byte(base64.StdEncoding.EncodeToString(raw)), 0o644); err != nil { // 1 KiB
		b.Fatal(err)
	}
	scenarios := []struct {
		name         string
		perMessage   bool
		source, dest map[string]string
	}{
		{"one record per message, no batching", true, nil, nil},
		{"one record per message, destination batch 1000", true, nil, map[string]string{"sdk.batch.size": "1000"}},
		{"1000-record messages", false, map[string]string{"sdk.batch.size": "1000"}, nil},
	}
	for _, sc := range scenarios {
		for _, p := range pairs(b, payload) {
			b.Run(sc.name+"/"+p.name, func(b *testing.B) {
				res := runPipeline(b, p, merge(p.sourceBase, sc.source), merge(p.destBase, sc.dest), int64(b.N), sc.perMessage)
				b.ReportMetric(float64(res.Acked)/res.Elapsed.Seconds(), "records/s")
				b.ReportMetric(float64(res.Read)/float64(res.SourceBatches), "records/msg")
			})
		}
	}
}

func runPipeline(b *testing.B, p pair, srcConfig, dstConfig map[string]string, records int64, perMessage bool) host.Result {
	b.Helper()
	// Generous for the records asked for: a few seconds per 100,000 here.
	ctx, cancel := context.WithTimeout(b.Context(), time.Minute+time.Duration(records)*20*time.Microsecond)
	defer cancel()
	launch := func(path string) *host.Plugin {
		pl, err := host.Launch(path, host.Options{ConnectorID: p.name, LogLevel: "info", Schemas: schemas})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(pl.Kill)
		return pl
	}
	src, err := launch(p.generator).Source()
	if err != nil {
		b.Fatal(err)
	}
	dst, err := launch(p.log).Destination()
	if err != nil {
		b.Fatal(err)
	}
	openPipeline(b, ctx, src, dst, srcConfig, dstConfig)
	b.ResetTimer()
	res, err := host.Pipeline{Source: src, Destination: dst, Records: records, PerMessage: perMessage}.Run(ctx)
	if err != nil && p.name == "incumbent" {
		// The incumbent's plugins sometimes never send a record (seen with
		// source batching); report it instead of failing the comparison.
		b.Skipf("the incumbent's pipeline failed: %v", err)
	}
	if err != nil {
		b.Fatal(err)
	}
	return res
}
