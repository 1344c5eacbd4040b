package plugin

import (
	"context"
	"log/slog"
)

func (h Hooks) created(ctx context.Context) error {
	if h.OnCreated == nil {
		return nil
	}
	return h.OnCreated(ctx)
}

func (h Hooks) updated(ctx context.Context, previous map[string]string) error {
	if h.OnUpdated == nil {
		return nil
	}
	return h.OnUpdated(ctx, previous)
}

func (h Hooks) deleted(ctx context.Context) error {
	if h.OnDeleted == nil {
		return nil
	}
	return h.OnDeleted(ctx)
}

// runHook runs hook on the configured connector's hooks or, when there is
// none (Conduit calls OnDeleted without Configure), on those of a connector
// that build configures for the occasion and that is torn down afterwards.
// Conduit fails a connector whose lifecycle call does not succeed, so a
// configuration that does not parse is logged, not returned: the hook has
// nothing to run on.
func runHook(ctx context.Context, log *slog.Logger, name string, configured *Hooks, build func() (Hooks, func(context.Context) error, error), hook func(Hooks) error) error {
	if configured != nil {
		return guard(name, func() error { return hook(*configured) })
	}
	var (
		hooks    Hooks
		teardown func(context.Context) error
	)
	if err := guard("Configure", func() (err error) { hooks, teardown, err = build(); return err }); err != nil {
		log.Warn("lifecycle "+name+" skipped: configuration does not parse", "error", err)
		return nil
	}
	if teardown != nil {
		defer func() { _ = guard("Teardown", func() error { return teardown(ctx) }) }()
	}
	return guard(name, func() error { return hook(hooks) })
}
