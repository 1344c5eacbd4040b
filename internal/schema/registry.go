package schema

import "context"

// Registry stores schemas under subjects. Implementations are safe for
// concurrent use.
type Registry interface {
	// Create registers text as a schema of type typ under subject and
	// returns it with its version. Versions of a subject start at 1 and
	// grow by one. Creating text identical to a version the subject already
	// has creates nothing and returns that version. An error wraps
	// ErrInvalidSchema when the registry refuses the text. The registry does
	// not retain text.
	Create(ctx context.Context, subject string, typ Type, text []byte) (Schema, error)
	// Get returns the schema registered under subject with version. An error
	// wraps ErrSubjectNotFound or ErrVersionNotFound (see IsNotFound) when
	// there is none, and names the subject and version.
	Get(ctx context.Context, subject string, version int) (Schema, error)
}
