package sdk

import (
	"context"
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
	is.Equal(d.Batching, batcher.Policy{Count: 500, Delay: 2 * time.Second, Bytes: 1 << 20})
	inner, ok := middleware.Find[nopDestination](d.Connector)
	is.True(ok) // the connector is inside the schema decoder
	is.Equal(inner, nopDestination{})

	d, err = c.ConfigureDestination(map[string]string{
		"sdk.schema.extract.payload.enabled": "false", "sdk.schema.extract.key.enabled": "false",
		"sdk.record.format": "opencdc/json",
	})
	is.NoErr(err)
	is.Equal(d.Batching, batcher.Policy{Bytes: middleware.DefaultBatchBytes}) // what fits in one of Conduit's messages
	is.Equal(d.Connector, Destination(nopDestination{}))                      // nothing to do: not wrapped
}

func TestConfigureReportsBadFormatOptions(t *testing.T) {
	c := Connector{Name: "nop", Version: "v0.1.0", Destination: NewDestination(newNop)}
	_, err := c.ConfigureDestination(map[string]string{"sdk.record.format": "debezium/json", "sdk.record.format.options": "debezium.nope=1"})
	if err == nil || !strings.Contains(err.Error(), "sdk.record.format.options") {
		t.Fatalf("got %v", err)
	}
}

func TestMiddlewareDefaultsComeFromTheListedValues(t *testing.T) {
	is := is.New(t)
	c := Connector{Name: "nop", Version: "v0.1.0", Destination: NewDestination(newNop),
		DestinationMiddleware: []middleware.DestinationSettings{middleware.Batching{Size: 1000, Delay: time.Second}}}
	spec, err := c.Specification()
	is.NoErr(err)
	defaults := map[string]string{}
	for _, p := range spec.DestinationParameters {
		defaults[p.Name] = p.Default
	}
	is.Equal(defaults["sdk.batch.size"], "1000")
	is.Equal(defaults["sdk.batch.delay"], "1s")
	is.Equal(defaults["sdk.batch.bytes"], "0")

	d, err := c.ConfigureDestination(map[string]string{})
	is.NoErr(err)
	is.Equal(d.Batching, batcher.Policy{Count: 1000, Delay: time.Second})
	d, err = c.ConfigureDestination(map[string]string{"sdk.batch.size": "5"})
	is.NoErr(err)
	is.Equal(d.Batching, batcher.Policy{Count: 5, Delay: time.Second}) // the pipeline overrides one
}

// hooked is a user's wrapper that names what it wraps as an sdk.Destination.
type hooked struct{ Destination }

func (h hooked) Unwrap() Destination { return h.Destination }

type withHook struct{ nopDestination }

func (withHook) OnCreated(context.Context) error { return nil }

func TestWrappersKeepOptionalInterfacesVisible(t *testing.T) {
	is := is.New(t)
	var d Destination = hooked{withHook{}}
	_, ok := middleware.Find[CreatedHook](d)
	is.True(ok)
}

func TestConfigureReportsEveryBadParameter(t *testing.T) {
	c := Connector{Name: "nop", Version: "v0.1.0", Destination: NewDestination(newNop)}
	_, err := c.ConfigureDestination(map[string]string{"level": "loud", "sdk.batch.szie": "5", "sdk.batch.delay": "soon", "sdk.batch.bytes": "-1"})
	for _, want := range []string{
		`parameter "level": got "loud", expected one of info, warn`,
		`parameter "sdk.batch.szie": is not a known parameter (did you mean "sdk.batch.size"?)`,
		`parameter "sdk.batch.delay": got "soon", expected a duration`,
		`parameter "sdk.batch.bytes": got "-1", expected at least 0`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not contain %q", err, want)
		}
	}
}

func TestOptingOutOfMiddleware(t *testing.T) {
	is := is.New(t)
	c := Connector{Name: "nop", Version: "v0.1.0", Destination: NewDestination(newNop), DestinationMiddleware: []middleware.DestinationSettings{}}
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

func (clashing) ForDestination(middleware.Env) (middleware.Middleware[Destination], error) {
	return nil, nil
}

func TestMiddlewareParameterClash(t *testing.T) {
	c := Connector{Name: "nop", Version: "v0.1.0", Destination: NewDestination(newNop),
		DestinationMiddleware: []middleware.DestinationSettings{middleware.Batching{}, clashing{}}}
	if _, err := c.Specification(); err == nil || !strings.Contains(err.Error(), `declares parameter "sdk.batch.size", which the connector or other middleware declares too`) {
		t.Fatalf("got %v", err)
	}
}

func TestPointerMiddleware(t *testing.T) {
	is := is.New(t)
	c := Connector{Name: "nop", Version: "v0.1.0", Destination: NewDestination(newNop),
		DestinationMiddleware: []middleware.DestinationSettings{&middleware.Batching{Size: 7}}}
	d, err := c.ConfigureDestination(map[string]string{"sdk.batch.size": "5"})
	is.NoErr(err)
	is.Equal(d.Batching.Count, 5)
	d, err = c.ConfigureDestination(map[string]string{})
	is.NoErr(err)
	is.Equal(d.Batching.Count, 7)
}

// TestNilPointerMiddleware lists a nil pointer to settings: the
// specification takes the tags' defaults from it, and so must Configure,
// which parses into a fresh value instead of panicking on the nil.
func TestNilPointerMiddleware(t *testing.T) {
	is := is.New(t)
	c := Connector{Name: "nop", Version: "v0.1.0", Destination: NewDestination(newNop),
		DestinationMiddleware: []middleware.DestinationSettings{(*middleware.Batching)(nil)}}
	_, err := c.Specification()
	is.NoErr(err)
	d, err := c.ConfigureDestination(map[string]string{"sdk.batch.size": "5"})
	is.NoErr(err)
	is.Equal(d.Batching.Count, 5)
	d, err = c.ConfigureDestination(map[string]string{})
	is.NoErr(err)
	is.Equal(d.Batching, batcher.Policy{})
}
