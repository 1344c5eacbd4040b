package schema

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"testing"

	"github.com/conduitio/conduit-commons/opencdc"
)

// countingRegistry registers nothing it must keep: version v of any
// subject is a record with the one field f<v>, and Create numbers schemas
// in the order it sees them. Memory a test sees grow is the caches'.
type countingRegistry struct {
	mu   sync.Mutex
	next int
}

func fieldSchema(subject string, version int) Schema {
	text := fmt.Sprintf(`{"type":"record","name":"r","fields":[{"name":"f%d","type":"long"}]}`, version)
	return Schema{Subject: subject, Version: version, ID: version, Type: TypeAvro, Bytes: []byte(text)}
}

func (r *countingRegistry) Get(_ context.Context, subject string, version int) (Schema, error) {
	return fieldSchema(subject, version), nil
}

func (r *countingRegistry) Create(_ context.Context, subject string, _ Type, text []byte) (Schema, error) {
	r.mu.Lock()
	r.next++
	v := r.next
	r.mu.Unlock()
	return Schema{Subject: subject, Version: v, ID: v, Type: TypeAvro, Bytes: text}, nil
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// Caches hold at most CacheSize entries each: through 10,000 distinct
// schemas, fetched by version, registered from data under a subject each
// and encoded and decoded with, the heap stops growing once they are full.
func TestCachesStayBounded(t *testing.T) {
	const schemas, filled = 10_000, 2 * CacheSize
	ctx := context.Background()
	reg := &countingRegistry{}
	registry, codecs := Cached(reg), NewCodecs(reg)
	use := func(i int) {
		if _, err := registry.Get(ctx, "cached", i); err != nil {
			t.Fatal(err)
		}
		c, err := codecs.Get(ctx, "codecs", i)
		if err != nil {
			t.Fatal(err)
		}
		d := opencdc.StructuredData{"f" + strconv.Itoa(i): int64(i)}
		enc, err := c.Encode(d)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Decode(enc); err != nil {
			t.Fatal(err)
		}
		if _, _, err := codecs.ForData(ctx, "data-"+strconv.Itoa(i), d); err != nil {
			t.Fatal(err)
		}
	}
	var full uint64 // the heap once every cache is full
	for i := 1; i <= schemas; i++ {
		use(i)
		if i == filled {
			full = heapInUse()
		}
	}
	grown := int64(heapInUse()) - int64(full)
	t.Logf("heap in use with the caches full: %d KiB; %d schemas later: %+d KiB", full>>10, schemas-filled, grown>>10)
	// An entry costs KiBs (a parsed schema and hamba/avro's decoders and
	// encoders for it): the 8,000 more without a bound take over 150 MiB.
	// A few MiB come and go with the garbage collector's timing.
	if grown > 16<<20 {
		t.Errorf("the heap grew by %d KiB over %d schemas after the caches were full", grown>>10, schemas-filled)
	}
	for name, n := range map[string]int{
		"Cached by version": registry.(*cached).gets.len(), "Cached by text": registry.(*cached).creates.len(),
		"Codecs by version": codecs.versions.len(), "Codecs by shape": codecs.shapes.len(), "Codecs last shapes": codecs.last.len(),
	} {
		if n > CacheSize {
			t.Errorf("%s keeps %d entries, more than %d", name, n, CacheSize)
		}
	}
}
