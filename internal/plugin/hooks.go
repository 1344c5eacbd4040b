package plugin

import (
	"context"
	"log/slog"
)

// runHook calls hook on the configured connector, or, when there is none, on
// one built for the occasion and torn down afterwards. Conduit fails a
// connector whose lifecycle call does not succeed, so a configuration that
// does not parse is logged, not returned: the hook has nothing to run on.
func runHook(ctx context.Context, log *slog.Logger, call string, configured any, build func() (any, error), hook func(any) error) error {
	conn := configured
	if conn == nil {
		var err error
		if err = guard("Configure", func() (err error) { conn, err = build(); return err }); err != nil {
			log.Warn("lifecycle "+call+" skipped: configuration does not parse", "error", err)
			return nil
		}
		defer func() {
			if t, ok := conn.(interface{ Teardown(context.Context) error }); ok {
				_ = guard("Teardown", func() error { return t.Teardown(ctx) })
			}
		}()
	}
	return guard(call, func() error { return hook(conn) })
}
