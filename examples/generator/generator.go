// Package generator is a source that generates records: a reference
// connector of connkit and a load generator for benchmarks.
package generator

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/connkit/connkit/sdk"
)

// Connector is the generator plugin.
var Connector = sdk.Connector{
	Name:        "generator",
	Version:     "v0.1.0",
	Summary:     "Generates records: raw JSON, structured data or a file's contents.",
	Description: "A source for trying out pipelines and for benchmarks. Positions are sequence numbers, so a restarted pipeline resumes after the last acknowledged record.",
	Author:      "connkit",
	Source:      sdk.NewSource(New),
}

var operations = map[string]sdk.Operation{
	"create":   sdk.OperationCreate,
	"update":   sdk.OperationUpdate,
	"delete":   sdk.OperationDelete,
	"snapshot": sdk.OperationSnapshot,
}

// Source generates records. Record i (counting from 1) has position and key
// "i"; its payload follows the format. With collections, records take turns
// among them in name order, each with its collection's format and
// operations and the opencdc.collection metadata.
type Source struct {
	cfg   Config
	kinds []kind

	seq        int64 // sequence number of the last record generated
	start      time.Time
	first      int64     // seq when the rate clock started
	burstStart time.Time // when the current burst began
	rng        *rand.Rand
	buf        []byte
}

// kind is what a record of one collection looks like.
type kind struct {
	collection string // empty without collections
	prefix     string // the parameters' prefix, for errors
	format     Format
	fields     []field
	file       []byte
	ops        []sdk.Operation
}

// New validates cfg and returns a generator.
func New(cfg Config) (*Source, error) {
	s := &Source{cfg: cfg}
	if len(cfg.Collections) == 0 {
		k, err := newKind("", "", cfg.Format, cfg.Operations)
		if err != nil {
			return nil, err
		}
		s.kinds = []kind{k}
		return s, nil
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Collections)) {
		c := cfg.Collections[name]
		k, err := newKind(name, "collections."+name+".", c.Format, c.Operations)
		if err != nil {
			return nil, err
		}
		s.kinds = append(s.kinds, k)
	}
	return s, nil
}

func newKind(collection, prefix string, format Format, ops []string) (kind, error) {
	k := kind{collection: collection, prefix: prefix, format: format}
	for _, name := range ops {
		op, ok := operations[name]
		if !ok {
			return kind{}, fmt.Errorf(`parameter "%soperations": got %q, expected a comma-separated list of create, update, delete, snapshot`, prefix, name)
		}
		k.ops = append(k.ops, op)
	}
	if len(k.ops) == 0 {
		return kind{}, fmt.Errorf(`parameter "%soperations": got none, expected at least one of create, update, delete, snapshot`, prefix)
	}
	if format.Type == "file" {
		if format.Options["path"] == "" {
			return kind{}, fmt.Errorf(`parameter "%sformat.options.path": is required when format.type is file`, prefix)
		}
		return k, nil
	}
	fields, err := parseFields(prefix, format.Options)
	if err != nil {
		return kind{}, err
	}
	k.fields = fields
	return k, nil
}

// Open resumes after from, the position of the last acknowledged record.
func (s *Source) Open(_ context.Context, from sdk.Position) error {
	if from != nil {
		seq, err := strconv.ParseInt(string(from), 10, 64)
		if err != nil || seq < 0 {
			return fmt.Errorf("position %q is not a generator position (a record sequence number)", from)
		}
		s.seq = seq
	}
	for i := range s.kinds {
		k := &s.kinds[i]
		if k.format.Type != "file" {
			continue
		}
		data, err := os.ReadFile(k.format.Options["path"])
		if err != nil {
			return fmt.Errorf(`parameter "%sformat.options.path": %w`, k.prefix, err)
		}
		k.file = data
	}
	s.rng = rand.New(rand.NewPCG(uint64(s.seq), 0x636f6e6e6b6974))
	return nil
}

// Read returns the next record. Once recordCount records exist it blocks
// until ctx is done.
func (s *Source) Read(ctx context.Context) (sdk.Record, error) {
	if s.cfg.RecordCount > 0 && s.seq >= s.cfg.RecordCount {
		<-ctx.Done()
		return sdk.Record{}, ctx.Err()
	}
	if err := s.pace(ctx); err != nil {
		return sdk.Record{}, err
	}
	s.seq++
	return s.record(time.Now()), nil
}

// ReadBatch returns up to max records at once, the fast path the SDK uses
// instead of Read. With a rate set it returns one record at a time, when it
// is due.
func (s *Source) ReadBatch(ctx context.Context, max int) ([]sdk.Record, error) {
	if s.cfg.Rate > 0 || max <= 1 {
		r, err := s.Read(ctx)
		if err != nil {
			return nil, err
		}
		return []sdk.Record{r}, nil
	}
	n := int64(max)
	if s.cfg.RecordCount > 0 {
		n = min(n, s.cfg.RecordCount-s.seq)
	}
	if n <= 0 {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if err := s.burst(ctx); err != nil {
		return nil, err
	}
	now := time.Now()
	records := make([]sdk.Record, n)
	for i := range records {
		s.seq++
		records[i] = s.record(now)
	}
	return records, nil
}

// pace waits until the next record is due under the configured rate, then
// pauses if the current burst is over.
func (s *Source) pace(ctx context.Context) error {
	if s.cfg.Rate > 0 {
		now := time.Now()
		if s.start.IsZero() {
			s.start, s.first = now, s.seq
		}
		due := s.start.Add(time.Duration(float64(s.seq-s.first) / s.cfg.Rate * float64(time.Second)))
		if err := sleep(ctx, due.Sub(now)); err != nil {
			return err
		}
	}
	return s.burst(ctx)
}

// burst pauses for burst.sleepTime once a burst has lasted
// burst.generateTime.
func (s *Source) burst(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b := s.cfg.Burst
	if b.SleepTime <= 0 {
		return nil
	}
	now := time.Now()
	if s.burstStart.IsZero() {
		s.burstStart = now
	}
	if now.Sub(s.burstStart) < b.GenerateTime {
		return nil
	}
	if err := sleep(ctx, b.SleepTime); err != nil {
		return err
	}
	s.burstStart = time.Now()
	s.start, s.first = s.burstStart, s.seq // the rate clock starts over with the burst
	return nil
}

// sleep waits for d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (s *Source) record(now time.Time) sdk.Record {
	pos := strconv.AppendInt(nil, s.seq, 10)
	k := &s.kinds[(s.seq-1)%int64(len(s.kinds))]
	op := k.ops[0]
	if len(k.ops) > 1 {
		op = k.ops[s.rng.IntN(len(k.ops))]
	}
	md := sdk.Metadata{}
	md.SetCreatedAt(now)
	if k.collection != "" {
		md.SetCollection(k.collection)
	}
	key := sdk.RawData(pos)
	if op == sdk.OperationDelete {
		return sdk.Delete(pos, md, key, nil) // a deletion carries the key only
	}
	var after sdk.Data
	switch k.format.Type {
	case "file":
		after = sdk.RawData(k.file)
	case "structured":
		after = structured(k.fields, s.rng, now)
	default:
		s.buf = raw(s.buf[:0], k.fields, s.rng, now)
		after = sdk.RawData(append([]byte(nil), s.buf...))
	}
	switch op {
	case sdk.OperationUpdate:
		return sdk.Update(pos, md, key, nil, after)
	case sdk.OperationSnapshot:
		return sdk.Snapshot(pos, md, key, after)
	default:
		return sdk.Create(pos, md, key, after)
	}
}

// Teardown has nothing to release.
func (s *Source) Teardown(context.Context) error { return nil }
