package plugin

import (
	"context"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/conduitio/conduit-connector-protocol/pconnector"
)

// Source mirrors sdk.Source.
type Source interface {
	Open(ctx context.Context, from opencdc.Position) error
	Read(ctx context.Context) (opencdc.Record, error)
	Teardown(ctx context.Context) error
}

// Acker mirrors sdk.Acker.
type Acker interface {
	Ack(ctx context.Context, position opencdc.Position) error
}

// Destination mirrors sdk.Destination.
type Destination interface {
	Open(ctx context.Context) error
	Write(ctx context.Context, records []opencdc.Record) (int, error)
	Teardown(ctx context.Context) error
}

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
