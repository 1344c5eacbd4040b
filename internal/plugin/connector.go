package plugin

import (
	"context"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/middleware"
)

// The connector interfaces are the middleware package's, which mirror sdk's
// method for method.
type (
	Source      = middleware.Source
	Destination = middleware.Destination
)

// Optional interfaces, found on the outermost layer that implements them
// (middleware.Find).
type (
	acker interface {
		Ack(ctx context.Context, position opencdc.Position) error
	}
	batchReader interface {
		ReadBatch(ctx context.Context, max int) ([]opencdc.Record, error)
	}
)

// The optional lifecycle hooks, mirroring sdk's.
type (
	createdHook interface {
		OnCreated(ctx context.Context) error
	}
	updatedHook interface {
		OnUpdated(ctx context.Context, previous map[string]string) error
	}
	deletedHook interface {
		OnDeleted(ctx context.Context) error
	}
)

// Connector is what a plugin binary serves: its specification and the
// constructors that turn a raw configuration into a configured connector.
// A nil constructor means the plugin does not play that role.
type Connector struct {
	Spec           pconnector.Specification
	NewSource      func(config map[string]string) (Source, error)
	NewDestination func(config map[string]string) (Destination, error)
}
