package schema

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"

	cavro "github.com/conduitio/conduit-commons/schema/avro"
)

// NewInMemory returns an empty [Registry] that keeps schemas in the process.
// It behaves like Conduit's builtin registry: versions start at 1, identical
// text under the same subject returns the existing version, and IDs are
// shared by subjects registering identical text. Unlike Conduit's, it checks
// that Avro text parses, and it reports a missing version of a known subject
// with ErrVersionNotFound.
func NewInMemory() Registry {
	return &inMemory{subjects: make(map[string][]Schema), ids: make(map[string]int)}
}

type inMemory struct {
	mu       sync.Mutex
	subjects map[string][]Schema // versions of a subject, version i at index i-1
	ids      map[string]int      // schema text to its ID
	lastID   int
}

func (r *inMemory) Create(_ context.Context, subject string, typ Type, text []byte) (Schema, error) {
	if typ != TypeAvro {
		return Schema{}, fmt.Errorf("create schema subject %q: type %v: %w", subject, typ, ErrInvalidSchema)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.subjects[subject] {
		if s.Type == typ && bytes.Equal(s.Bytes, text) {
			return s, nil
		}
	}
	id, ok := r.ids[string(text)]
	if !ok {
		if _, err := cavro.Parse(text); err != nil {
			return Schema{}, fmt.Errorf("create schema subject %q: %w: %w", subject, ErrInvalidSchema, err)
		}
		r.lastID++
		id = r.lastID
		r.ids[string(text)] = id
	}
	s := Schema{
		Subject: subject,
		Version: len(r.subjects[subject]) + 1,
		ID:      id,
		Type:    typ,
		Bytes:   slices.Clone(text),
	}
	r.subjects[subject] = append(r.subjects[subject], s)
	return s, nil
}

func (r *inMemory) Get(_ context.Context, subject string, version int) (Schema, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	versions, ok := r.subjects[subject]
	if !ok {
		return Schema{}, fmt.Errorf("schema subject %q version %d: %w", subject, version, ErrSubjectNotFound)
	}
	if version < 1 || version > len(versions) {
		return Schema{}, fmt.Errorf("schema subject %q version %d: %w", subject, version, ErrVersionNotFound)
	}
	return versions[version-1], nil
}
