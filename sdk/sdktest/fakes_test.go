package sdktest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/connkit/connkit/sdk"
)

// fakeConfig is the fakes' configuration.
type fakeConfig struct {
	Mode  string `param:"mode" default:"normal" validate:"inclusion=normal|other" desc:"What the fake does."`
	Count int    `param:"count" default:"0" validate:"gt=-1" desc:"A number."`
	// The broken plugin's parameters, which the fakes accept and ignore.
	Bug  string `param:"bug" desc:"The broken plugin's bug."`
	Path string `param:"path" desc:"The broken plugin's file."`
}

// sourceBug is how a fake source is broken.
type sourceBug int

const (
	sourceOK              sourceBug = iota
	sourceIgnoresPosition           // restarts from the beginning
	sourceSkipsAhead                // resumes two records too late
	sourceNoPosition                // records without positions
	sourceIgnoresContext            // Read does not return when its context is done
	sourceLeaks                     // Open starts a goroutine Teardown does not stop
	sourceFailingHook               // OnCreated fails
)

// fakeSource reads records "1", "2", ... after its Open position, as fast
// as it is asked, broken as bug says.
type fakeSource struct {
	bug  sourceBug
	leak chan struct{} // the leaked goroutine waits for it

	mu   sync.Mutex
	next int
}

func (s *fakeSource) Open(_ context.Context, from sdk.Position) error {
	if s.bug == sourceLeaks {
		go func() { <-s.leak }()
	}
	if from == nil || s.bug == sourceIgnoresPosition {
		return nil
	}
	n, err := strconv.Atoi(string(from))
	if err != nil {
		return fmt.Errorf("bad position %q", from)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next = n
	if s.bug == sourceSkipsAhead {
		s.next += 2
	}
	return nil
}

func (s *fakeSource) Read(ctx context.Context) (sdk.Record, error) {
	s.mu.Lock()
	started := s.next > 0
	s.mu.Unlock()
	if s.bug == sourceIgnoresContext && started {
		time.Sleep(3 * time.Second) // whatever ctx says
	} else if err := ctx.Err(); err != nil {
		return sdk.Record{}, err
	}
	s.mu.Lock()
	s.next++
	n := s.next
	s.mu.Unlock()
	r := sdk.Record{
		Position:  sdk.Position(strconv.Itoa(n)),
		Operation: sdk.OperationCreate,
		Key:       sdk.StructuredData{"id": n},
		Payload:   sdk.Change{After: sdk.RawData(fmt.Sprintf(`{"id":%d}`, n))},
	}
	if s.bug == sourceNoPosition {
		r.Position = nil
	}
	return r, nil
}

func (s *fakeSource) Teardown(context.Context) error { return nil }

// OnCreated fails with the bug sourceFailingHook.
func (s *fakeSource) OnCreated(context.Context) error {
	if s.bug == sourceFailingHook {
		return errors.New("hook exploded")
	}
	return nil
}

func sourceConnector(bug sourceBug, leak chan struct{}) sdk.Connector {
	newSource := func(fakeConfig) (*fakeSource, error) { return &fakeSource{bug: bug, leak: leak}, nil }
	return sdk.Connector{Name: "fake", Version: "v0.1.0", Source: sdk.NewSource(newSource)}
}

// destinationBug is how a fake destination is broken.
type destinationBug int

const (
	destinationOK            destinationBug = iota
	destinationShortWrite                   // returns n < len with a nil error
	destinationOvercounts                   // returns n > len
	destinationLies                         // acknowledges without writing
	destinationDuplicates                   // writes every record twice
	destinationModifies                     // changes the records it is given
	destinationRejectsDelete                // fails every delete
	destinationFailingHook                  // OnDeleted fails
	destinationIgnoresDelete                // acknowledges deletes without deleting
	destinationCorrupts                     // writes every name in upper case
	destinationPanics                       // panics in Write, as a bug does
	destinationFailsAfterTwo                // writes the first two records it is given and fails the third, on purpose
)

// store is the fake destination's system: a log of records or, keyed, a
// table of them by key.
type store struct {
	keyed   bool
	mu      sync.Mutex
	records []sdk.Record
}

func (s *store) readBack(context.Context) ([]sdk.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.keyed {
		return append([]sdk.Record(nil), s.records...), nil
	}
	var keys []string
	table := map[string]sdk.Record{}
	for _, r := range s.records {
		k := string(r.Key.Bytes())
		if _, ok := table[k]; !ok {
			keys = append(keys, k)
		}
		if r.Operation == sdk.OperationDelete {
			delete(table, k)
		} else {
			table[k] = r
		}
	}
	var out []sdk.Record
	for _, k := range keys {
		if r, ok := table[k]; ok {
			out = append(out, r)
		}
	}
	return out, nil
}

type fakeDestination struct {
	bug   destinationBug
	store *store
	given atomic.Int64 // records Write was given, all Writes together
}

func (d *fakeDestination) Open(context.Context) error     { return nil }
func (d *fakeDestination) Teardown(context.Context) error { return nil }

func (d *fakeDestination) Write(_ context.Context, records []sdk.Record) (int, error) {
	switch d.bug {
	case destinationShortWrite:
		if len(records) > 1 {
			d.keep(records[:len(records)-1])
			return len(records) - 1, nil
		}
	case destinationOvercounts:
		d.keep(records)
		return len(records) + 1, nil
	case destinationLies:
		return len(records), nil
	case destinationDuplicates:
		d.keep(records)
	case destinationModifies:
		records[0].Position = sdk.Position("changed")
	case destinationPanics:
		var written map[string]bool
		written["x"] = true // a nil map
	case destinationFailsAfterTwo:
		given := d.given.Add(int64(len(records))) - int64(len(records))
		if given < 3 && given+int64(len(records)) >= 3 {
			n := 2 - given
			d.keep(records[:n])
			return int(n), errors.New("broken on purpose")
		}

	case destinationCorrupts:
		for _, r := range records {
			if f, err := sdk.FieldsOf(r.Payload.After); err == nil && len(f) > 0 {
				name, _ := f.String("name")
				r.Payload.After = sdk.StructuredData{"id": f["id"], "name": strings.ToUpper(name)}
			}
			d.keep([]sdk.Record{r})
		}
		return len(records), nil
	case destinationIgnoresDelete:
		for _, r := range records {
			if r.Operation != sdk.OperationDelete {
				d.keep([]sdk.Record{r})
			}
		}
		return len(records), nil
	case destinationRejectsDelete:
		for i, r := range records {
			if r.Operation == sdk.OperationDelete {
				d.keep(records[:i])
				return i, errors.New("cannot delete")
			}
		}
	}
	d.keep(records)
	return len(records), nil
}

func (d *fakeDestination) keep(records []sdk.Record) {
	d.store.mu.Lock()
	defer d.store.mu.Unlock()
	for _, r := range records {
		d.store.records = append(d.store.records, r.Clone())
	}
}

// OnDeleted fails with the bug destinationFailingHook.
func (d *fakeDestination) OnDeleted(context.Context) error {
	if d.bug == destinationFailingHook {
		return errors.New("hook exploded")
	}
	return nil
}

func destinationConnector(bug destinationBug, s *store) sdk.Connector {
	newDestination := func(fakeConfig) (*fakeDestination, error) { return &fakeDestination{bug: bug, store: s}, nil }
	return sdk.Connector{Name: "fake", Version: "v0.1.0", Destination: sdk.NewDestination(newDestination)}
}
