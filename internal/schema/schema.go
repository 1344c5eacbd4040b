package schema

import (
	"errors"
	"strings"

	cschema "github.com/conduitio/conduit-commons/schema"
	"github.com/conduitio/conduit-connector-protocol/pconnutils"
)

// Schema is a registered schema: its subject, version, registry-wide ID,
// type and text. Schemas are immutable once registered; callers must not
// modify Bytes.
type Schema = cschema.Schema

// Type is the kind of schema text.
type Type = cschema.Type

// TypeAvro marks an Avro schema, the only type Conduit supports.
const TypeAvro = cschema.TypeAvro

// The errors a [Registry] wraps, the same values Conduit's schema service
// and Conduit's SDK use, so errors.Is holds on both sides of the wire.
var (
	// ErrSubjectNotFound: no schema was ever registered under the subject.
	// The data naming it cannot be decoded here; report it, do not retry.
	// Conduit's own registry also returns it for a missing version of a
	// subject that exists, so check for both with [IsNotFound].
	ErrSubjectNotFound = pconnutils.ErrSubjectNotFound
	// ErrVersionNotFound: the subject exists but has no such version.
	ErrVersionNotFound = pconnutils.ErrVersionNotFound
	// ErrInvalidSchema: the registry refused the schema text. Retrying with
	// the same text fails the same way.
	ErrInvalidSchema = pconnutils.ErrInvalidSchema
)

// IsNotFound reports whether err says a subject or version does not exist.
func IsNotFound(err error) bool {
	return errors.Is(err, ErrSubjectNotFound) || errors.Is(err, ErrVersionNotFound)
}

// sentinels are the errors that cross the wire as bare messages.
var sentinels = []error{ErrSubjectNotFound, ErrVersionNotFound, ErrInvalidSchema}

// knownError returns the sentinel err stands for, or nil. A sentinel that
// crossed gRPC arrives as a plain error carrying its message, possibly after
// context the server added, so messages are matched as well as values.
func knownError(err error) error {
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return s
		}
	}
	msg := err.Error()
	for _, s := range sentinels {
		if msg == s.Error() || strings.HasSuffix(msg, ": "+s.Error()) {
			return s
		}
	}
	return nil
}
