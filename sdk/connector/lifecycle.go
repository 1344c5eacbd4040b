package connector

import "context"

// The lifecycle hooks are optional interfaces a [Source] or [Destination] may
// implement. Conduit calls them when a connector is created, when its
// configuration changes, and when it is deleted, before Open and possibly
// without it. A connector that does not implement a hook is answered with
// success on its behalf; a hook's error fails the connector in Conduit.
type (
	// CreatedHook runs once when the connector is created.
	CreatedHook interface {
		OnCreated(ctx context.Context) error
	}
	// UpdatedHook runs when the connector's configuration changed; previous
	// is the raw configuration it had before.
	UpdatedHook interface {
		OnUpdated(ctx context.Context, previous map[string]string) error
	}
	// DeletedHook runs when the connector is deleted. It may run without
	// Open ever having been called.
	DeletedHook interface {
		OnDeleted(ctx context.Context) error
	}
)
