package sdktest

import "context"

// instance is what a configured and opened source or destination shares:
// it is torn down once, by its check or else when the check ends, after its
// Run stream is closed, as Conduit does.
type instance struct {
	lifecycle lifecycleClient
	stream    *streamReader // once Run has started
	torn      bool
}

// tearDownAtEnd tears the instance down when the check ends, unless the
// check did.
func (i *instance) tearDownAtEnd(t tb) {
	t.Cleanup(func() {
		if !i.torn {
			ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
			defer cancel()
			_ = i.teardown(ctx)
		}
	})
}

// teardown closes the Run stream, as Conduit does, and tears down.
func (i *instance) teardown(ctx context.Context) error {
	i.torn = true
	if i.stream != nil {
		i.stream.close()
	}
	return i.lifecycle.teardown(ctx)
}

func (i *instance) mustTeardown(t tb) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	if err := i.teardown(ctx); err != nil {
		t.Errorf("Teardown fails: %v\nTeardown must release what Open acquired and return, also after Stop.", err)
	}
}
