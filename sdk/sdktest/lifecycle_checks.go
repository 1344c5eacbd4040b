package sdktest

import (
	"context"

	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/internal/host"
)

// lifecycleClient is a source or destination client for the lifecycle
// checks.
type lifecycleClient interface {
	configure(ctx context.Context, cfg map[string]string) error
	open(ctx context.Context) error
	created(ctx context.Context, cfg map[string]string) error
	updated(ctx context.Context, before, after map[string]string) error
	deleted(ctx context.Context, cfg map[string]string) error
	teardown(ctx context.Context) error
}

type sourceLifecycle struct{ c host.SourceClient }

func (s sourceLifecycle) configure(ctx context.Context, cfg map[string]string) error {
	return errOf(s.c.Configure(ctx, pconnector.SourceConfigureRequest{Config: cfg}))
}

func (s sourceLifecycle) open(ctx context.Context) error {
	return errOf(s.c.Open(ctx, pconnector.SourceOpenRequest{}))
}

func (s sourceLifecycle) created(ctx context.Context, cfg map[string]string) error {
	return errOf(s.c.LifecycleOnCreated(ctx, pconnector.SourceLifecycleOnCreatedRequest{Config: cfg}))
}

func (s sourceLifecycle) updated(ctx context.Context, before, after map[string]string) error {
	return errOf(s.c.LifecycleOnUpdated(ctx, pconnector.SourceLifecycleOnUpdatedRequest{ConfigBefore: before, ConfigAfter: after}))
}

func (s sourceLifecycle) deleted(ctx context.Context, cfg map[string]string) error {
	return errOf(s.c.LifecycleOnDeleted(ctx, pconnector.SourceLifecycleOnDeletedRequest{Config: cfg}))
}

func (s sourceLifecycle) teardown(ctx context.Context) error {
	return errOf(s.c.Teardown(ctx, pconnector.SourceTeardownRequest{}))
}

type destinationLifecycle struct{ c host.DestinationClient }

func (d destinationLifecycle) configure(ctx context.Context, cfg map[string]string) error {
	return errOf(d.c.Configure(ctx, pconnector.DestinationConfigureRequest{Config: cfg}))
}

func (d destinationLifecycle) open(ctx context.Context) error {
	return errOf(d.c.Open(ctx, pconnector.DestinationOpenRequest{}))
}

func (d destinationLifecycle) created(ctx context.Context, cfg map[string]string) error {
	return errOf(d.c.LifecycleOnCreated(ctx, pconnector.DestinationLifecycleOnCreatedRequest{Config: cfg}))
}

func (d destinationLifecycle) updated(ctx context.Context, before, after map[string]string) error {
	return errOf(d.c.LifecycleOnUpdated(ctx, pconnector.DestinationLifecycleOnUpdatedRequest{ConfigBefore: before, ConfigAfter: after}))
}

func (d destinationLifecycle) deleted(ctx context.Context, cfg map[string]string) error {
	return errOf(d.c.LifecycleOnDeleted(ctx, pconnector.DestinationLifecycleOnDeletedRequest{Config: cfg}))
}

func (d destinationLifecycle) teardown(ctx context.Context) error {
	return errOf(d.c.Teardown(ctx, pconnector.DestinationTeardownRequest{}))
}

// errOf returns the error of a call whose response says nothing more.
func errOf[R any](_ R, err error) error { return err }

// checkLifecycle makes the lifecycle calls in the orders Conduit makes
// them; each must succeed, or Conduit fails the connector.
func checkLifecycle(t tb, ctx context.Context, cfg map[string]string, fresh func() lifecycleClient) {
	t.Helper()
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s fails: %v\nConduit fails the connector when a lifecycle call does not succeed: hooks must succeed for a working configuration", what, err)
		}
	}
	c := fresh()
	must("Configure", c.configure(ctx, cfg))
	must("OnCreated", c.created(ctx, cfg))
	must("Open after OnCreated", c.open(ctx))
	must("Teardown after OnCreated and Open", c.teardown(ctx))

	c = fresh()
	must("Configure", c.configure(ctx, cfg))
	must("OnUpdated", c.updated(ctx, cfg, cfg))
	must("Open after OnUpdated", c.open(ctx))
	must("Teardown after OnUpdated and Open", c.teardown(ctx))

	// Deletion comes without Configure or Open.
	c = fresh()
	must("OnDeleted without Configure", c.deleted(ctx, cfg))
	must("Teardown after OnDeleted", c.teardown(ctx))
}
