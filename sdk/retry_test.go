package sdk

import (
	"testing"
	"time"

	"github.com/connkit/connkit/internal/plugin"
	"github.com/matryer/is"
)

func TestConfigureHandsOverTheRetryPolicy(t *testing.T) {
	is := is.New(t)
	c := Connector{Name: "nop", Version: "v0.1.0", Destination: NewDestination(newNop)}
	d, err := configureDestination(c, map[string]string{})
	is.NoErr(err)
	is.Equal(d.Retry, plugin.Retry{Attempts: 8, Delay: 100 * time.Millisecond, MaxDelay: 10 * time.Second})
	d, err = configureDestination(c, map[string]string{"sdk.retry.attempts": "2", "sdk.retry.delay": "1s", "sdk.retry.maxDelay": "1m"})
	is.NoErr(err)
	is.Equal(d.Retry, plugin.Retry{Attempts: 2, Delay: time.Second, MaxDelay: time.Minute})

	// A connector whose default is no retries is never retried.
	c.DestinationDefaults = map[string]string{"sdk.retry.attempts": "0", "sdk.retry.delay": "0", "sdk.retry.maxDelay": "0"}
	d, err = configureDestination(c, map[string]string{})
	is.NoErr(err)
	is.Equal(d.Retry, plugin.Retry{})
}
