package sdk

import (
	"strings"
	"testing"
	"time"

	"github.com/connkit/connkit/batcher"
	"github.com/connkit/connkit/middleware"
	"github.com/matryer/is"
)

func TestConfigureAppliesDefaultMiddleware(t *testing.T) {
	is := is.New(t)
	c := Connector{Name: "nop", Version: "v0.1.0", Destination: NewDestination(newNop)}
	d, err := c.ConfigureDestination(map[string]string{"level": "warn", "sdk.batch.size": "500", "sdk.batch.delay": "2s", "sdk.batch.bytes": "1048576"})
	is.NoErr(err)
	p, ok := middleware.PolicyOf(d)
	is.True(ok)
	is.Equal(p, batcher.Policy{Count: 500, Delay: 2 * time.Second, Bytes: 1 << 20})
	inner, ok := middleware.Find[nopDestination](d)
	is.True(ok) // the connector is inside
	is.Equal(inner, nopDestination{})

	// No batching settings: nothing to wrap.
	d, err = c.ConfigureDestination(map[string]string{})
	is.NoErr(err)
	is.Equal(d, nopDestination{})
}

func TestConfigureReportsEveryBadParameter(t *testing.T) {
	c := Connector{Name: "nop", Version: "v0.1.0", Destination: NewDestination(newNop)}
	_, err := c.ConfigureDestination(map[string]string{"level": "loud", "sdk.batch.szie": "5", "sdk.batch.delay": "soon", "sdk.batch.bytes": "-1"})
	for _, want := range []string{
		`parameter "level": got "loud", expected one of info, warn`,
		`parameter "sdk.batch.szie": is not a known parameter (did you mean "sdk.batch.size"?)`,
		`parameter "sdk.batch.delay": got "soon", expected a duration`,
		`parameter "sdk.batch.bytes": got "-1", expected a value greater than -1`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not contain %q", err, want)
		}
	}
}

func TestOptingOutOfMiddleware(t *testing.T) {
	is := is.New(t)
	c := Connector{Name: "nop", Version: "v0.1.0", Destination: NewDestination(newNop), Middleware: []middleware.Configurable{}}
	spec, err := c.Specification()
	is.NoErr(err)
	is.Equal(len(spec.DestinationParameters), 1) // only the connector's own
	_, err = c.ConfigureDestination(map[string]string{"sdk.batch.size": "5"})
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), `parameter "sdk.batch.size": is not a known parameter`))
}

type clashing struct {
	Size int `param:"sdk.batch.size"`
}

func (clashing) ForSource() middleware.Middleware[middleware.Source]           { return nil }
func (clashing) ForDestination() middleware.Middleware[middleware.Destination] { return nil }

func TestMiddlewareParameterClash(t *testing.T) {
	c := Connector{Name: "nop", Version: "v0.1.0", Destination: NewDestination(newNop),
		Middleware: []middleware.Configurable{middleware.Batching{}, clashing{}}}
	if _, err := c.Specification(); err == nil || !strings.Contains(err.Error(), `declares parameter "sdk.batch.size", which the connector or other middleware declares too`) {
		t.Fatalf("got %v", err)
	}
}

func TestPointerMiddleware(t *testing.T) {
	is := is.New(t)
	c := Connector{Name: "nop", Version: "v0.1.0", Destination: NewDestination(newNop),
		Middleware: []middleware.Configurable{&middleware.Batching{}}}
	d, err := c.ConfigureDestination(map[string]string{"sdk.batch.size": "5"})
	is.NoErr(err)
	p, ok := middleware.PolicyOf(d)
	is.True(ok)
	is.Equal(p.Count, 5)
}
