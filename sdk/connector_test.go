package sdk

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/connkit/connkit/batcher"
	"github.com/connkit/connkit/internal/plugin"
	"github.com/connkit/connkit/sdk/config"
	"github.com/matryer/is"
)

func configureDestination(c Connector, raw map[string]string) (plugin.Destination, error) {
	return factory{c: c}.ConfigureDestination(raw)
}

func TestConfigureHandsThePoliciesToTheServer(t *testing.T) {
	is := is.New(t)
	c := Connector{Name: "nop", Version: "v0.1.0", Destination: NewDestination(newNop)}
	d, err := configureDestination(c, map[string]string{"level": "warn", "sdk.batch.size": "500", "sdk.batch.delay": "2s", "sdk.batch.bytes": "1048576", "sdk.retry.attempts": "3"})
	is.NoErr(err)
	is.Equal(d.Batch, batcher.Policy{Count: 500, Delay: 2 * time.Second, Bytes: 1 << 20})
	is.Equal(d.Retry, plugin.Retry{Attempts: 3, Delay: 100 * time.Millisecond, MaxDelay: 10 * time.Second})

	d, err = configureDestination(c, map[string]string{})
	is.NoErr(err)
	is.Equal(d.Batch, batcher.Policy{Bytes: 4<<20 - 256<<10}) // what fits in one of Conduit's messages
}

func TestConfigureClassifiesWriteErrors(t *testing.T) {
	is := is.New(t)
	c := Connector{Name: "nop", Version: "v0.1.0", Destination: NewDestination(newNop)}
	d, err := configureDestination(c, map[string]string{})
	is.NoErr(err)
	is.Equal(d.Classify(RecordFault(context.Canceled)), plugin.RecordFault)
	is.Equal(d.Classify(Retryable(context.Canceled)), plugin.Retryable)
	is.Equal(d.Classify(context.Canceled), plugin.Unclassified)
}

// recording is a destination that keeps the records of its last Write.
type recording struct {
	nopDestination
	got *[]Record
}

func (r recording) Write(_ context.Context, recs []Record) (int, error) {
	*r.got = recs
	return len(recs), nil
}

func TestConfigureWrapsWritesInTheMiddleware(t *testing.T) {
	is := is.New(t)
	var got []Record
	c := Connector{Name: "rec", Version: "v0.1.0", Destination: NewDestination(func(struct{}) (recording, error) { return recording{got: &got}, nil })}
	d, err := configureDestination(c, map[string]string{"sdk.record.format": "template", "sdk.record.format.options": "{{ .Position }}"})
	is.NoErr(err)
	_, err = d.Write(t.Context(), []Record{{Position: opencdc.Position("p1")}})
	is.NoErr(err)
	is.Equal(string(got[0].Bytes()), "p1") // the record format's serializer is set
}

func TestConfigureReportsBadFormatOptions(t *testing.T) {
	c := Connector{Name: "nop", Version: "v0.1.0", Destination: NewDestination(newNop)}
	_, err := configureDestination(c, map[string]string{"sdk.record.format": "debezium/json", "sdk.record.format.options": "debezium.nope=1"})
	if err == nil || !strings.Contains(err.Error(), "sdk.record.format.options") {
		t.Fatalf("got %v", err)
	}
}

func TestDefaultsComeFromTheConnector(t *testing.T) {
	is := is.New(t)
	c := Connector{Name: "nop", Version: "v0.1.0", Destination: NewDestination(newNop),
		DestinationDefaults: map[string]string{"sdk.batch.size": "1000", "sdk.batch.delay": "1s"}}
	spec, err := c.Specification()
	is.NoErr(err)
	defaults := map[string]string{}
	for _, p := range spec.DestinationParameters {
		defaults[p.Name] = p.Default
	}
	is.Equal(defaults["sdk.batch.size"], "1000")
	is.Equal(defaults["sdk.batch.delay"], "1s")
	is.Equal(defaults["sdk.batch.bytes"], "3932160") // the others keep the SDK's
	is.Equal(defaults["sdk.retry.attempts"], "8")

	d, err := configureDestination(c, map[string]string{})
	is.NoErr(err)
	is.Equal(d.Batch, batcher.Policy{Count: 1000, Delay: time.Second, Bytes: 3932160})
	d, err = configureDestination(c, map[string]string{"sdk.batch.size": "5", " sdk.batch.delay": " "})
	is.NoErr(err)
	is.Equal(d.Batch, batcher.Policy{Count: 5, Delay: time.Second, Bytes: 3932160}) // the pipeline overrides one; an empty value is none
}

func TestSchemaDecodingCanBeTurnedOff(t *testing.T) {
	is := is.New(t)
	raw := opencdc.Record{Position: opencdc.Position("p"), Metadata: opencdc.Metadata{
		opencdc.MetadataPayloadSchemaSubject: "nope", opencdc.MetadataPayloadSchemaVersion: "1",
	}, Payload: opencdc.Change{After: opencdc.RawData("x")}}
	var got []Record
	newRec := func(struct{}) (recording, error) { return recording{got: &got}, nil }
	on := Connector{Name: "rec", Version: "v0.1.0", Destination: NewDestination(newRec)}
	d, err := configureDestination(on, map[string]string{})
	is.NoErr(err)
	_, err = d.Write(t.Context(), []Record{raw})
	is.True(err != nil) // the schema it names is not in the registry

	off := on
	off.DestinationDefaults = map[string]string{"sdk.schema.extract.payload.enabled": "false"}
	d, err = configureDestination(off, map[string]string{})
	is.NoErr(err)
	_, err = d.Write(t.Context(), []Record{raw})
	is.NoErr(err)
	is.Equal(got[0].Payload.After, raw.Payload.After) // passed as it came
}

// hooked is a user's wrapper that names what it wraps as an sdk.Destination.
type hooked struct{ Destination }

func (h hooked) Unwrap() Destination { return h.Destination }

type withHook struct{ nopDestination }

func (withHook) OnCreated(context.Context) error { return nil }

func TestWrappersKeepOptionalInterfacesVisible(t *testing.T) {
	is := is.New(t)
	c := Connector{Name: "nop", Version: "v0.1.0", Destination: NewDestination(func(nopConfig) (Destination, error) {
		return hooked{withHook{}}, nil
	})}
	d, err := configureDestination(c, map[string]string{})
	is.NoErr(err)
	is.True(d.OnCreated != nil) // found through the wrapper, once, at Configure
	is.True(d.OnDeleted == nil)
}

func TestConfigureReportsEveryBadParameter(t *testing.T) {
	c := Connector{Name: "nop", Version: "v0.1.0", Destination: NewDestination(newNop)}
	_, err := configureDestination(c, map[string]string{"level": "loud", "sdk.batch.szie": "5", "sdk.batch.delay": "soon", "sdk.batch.bytes": "-1", "sdk.retry.delay": "1m"})
	for _, want := range []string{
		`parameter "level": got "loud", expected one of info, warn`,
		`parameter "sdk.batch.szie": is not a known parameter (did you mean "sdk.batch.size"?)`,
		`parameter "sdk.batch.delay": got "soon", expected a duration`,
		`parameter "sdk.batch.bytes": got "-1", expected at least 0`,
		`parameter "sdk.retry.maxDelay": got "10s", expected at least the 1m0s of "sdk.retry.delay"`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not contain %q", err, want)
		}
	}
}

type clashing struct {
	Size int `param:"sdk.batch.size"`
}

func newClashing(clashing) (nopDestination, error) { return nopDestination{}, nil }

func TestParameterClash(t *testing.T) {
	c := Connector{Name: "nop", Version: "v0.1.0", Destination: NewDestination(newClashing)}
	if _, err := c.Specification(); err == nil || !strings.Contains(err.Error(), `parameter "sdk.batch.size" is declared twice`) {
		t.Fatalf("got %v", err)
	}
}

// TestFactoryRunsAfterValidate checks the order a connector author relies
// on: tags and Validate are reported together, and the factory runs only
// on a configuration that passed both.
func TestFactoryRunsAfterValidate(t *testing.T) {
	is := is.New(t)
	built := 0
	f := NewDestination(func(cfg rangeConfig) (nopDestination, error) {
		built++
		if cfg.Name == "refused" {
			return nopDestination{}, &config.ParameterError{Name: "name", Value: cfg.Name, Expected: "anything else"}
		}
		return nopDestination{}, nil
	})
	c := Connector{Name: "x", Version: "v0.1.0", Destination: f}

	_, err := configureDestination(c, map[string]string{"min": "3", "max": "2", "unknown": "1"})
	is.Equal(err.Error(), "invalid configuration: "+strings.Join([]string{
		`parameter "unknown": is not a known parameter`,
		`parameter "name": is required but missing`,
		`parameter "min": got "3", expected less than max (2)`,
	}, "; "))
	is.Equal(built, 0) // the factory never sees a configuration with errors

	_, err = f.New(map[string]string{"name": "refused"})
	is.Equal(err.Error(), `invalid configuration: parameter "name": got "refused", expected anything else`)
	var pe *config.ParameterError
	is.True(errors.As(err, &pe))
	is.Equal(built, 1)
}

// rangeConfig's Validate checks that min is below max, which no tag can.
type rangeConfig struct {
	Min  int    `param:"min" default:"0"`
	Max  int    `param:"max" default:"10"`
	Name string `param:"name" validate:"required"`
}

func (c *rangeConfig) Validate() error {
	if c.Min >= c.Max {
		return &config.ParameterError{Name: "min", Value: strconv.Itoa(c.Min), Expected: "less than max (" + strconv.Itoa(c.Max) + ")"}
	}
	return nil
}

// concurrentNop is a nopDestination that takes concurrent Writes, split by
// key.
type concurrentNop struct{ nopDestination }

func (concurrentNop) WriteSplit() Split { return SplitByKey }

// TestWriteConcurrency: sdk.write.concurrency is auto (adaptive, up to
// 32) or a number for a ConcurrentDestination, which says how records
// split; a destination that writes one batch at a time takes auto or 1,
// and refuses more, naming the parameter.
func TestWriteConcurrency(t *testing.T) {
	concurrent := Connector{Name: "c", Version: "v0.1.0", Destination: NewDestination(func(nopConfig) (concurrentNop, error) { return concurrentNop{}, nil })}
	serial := Connector{Name: "s", Version: "v0.1.0", Destination: NewDestination(newNop)}
	tests := []struct {
		name  string
		c     Connector
		value string // "": not set
		want  plugin.Concurrency
		err   string
	}{
		{"auto by default", concurrent, "", plugin.Concurrency{Max: 32, Adaptive: true, ByKey: true}, ""},
		{"a number", concurrent, "8", plugin.Concurrency{Max: 8, ByKey: true}, ""},
		{"one at a time", concurrent, "1", plugin.Concurrency{Max: 1, ByKey: true}, ""},
		{"serial, auto", serial, "auto", plugin.Concurrency{Max: 1}, ""},
		{"serial, one", serial, "1", plugin.Concurrency{Max: 1}, ""},
		{"serial, more", serial, "4", plugin.Concurrency{}, `parameter "sdk.write.concurrency": got "4", expected auto or 1: this destination writes one batch at a time`},
		{"not a number", concurrent, "many", plugin.Concurrency{}, `parameter "sdk.write.concurrency": got "many", expected auto or a number of Writes, at least 1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			raw := map[string]string{}
			if tt.value != "" {
				raw["sdk.write.concurrency"] = tt.value
			}
			d, err := configureDestination(tt.c, raw)
			if tt.err != "" {
				is.True(err != nil)
				is.True(strings.Contains(err.Error(), tt.err)) // names the parameter and what it takes
				return
			}
			is.NoErr(err)
			is.Equal(d.Concurrency, tt.want)
		})
	}
}

// counting is a layer that counts the Writes of the destination it wraps,
// and names it with Unwrap unless hide is set.
type counting struct {
	Destination
	writes *int
}

func (c counting) Write(ctx context.Context, recs []Record) (int, error) {
	*c.writes++
	return c.Destination.Write(ctx, recs)
}

func (c counting) Unwrap() Destination { return c.Destination }

// hiding is counting without Unwrap.
type hiding struct{ Destination }

// TestWrapLayersEveryDestination: a wrapped factory has the parameters of
// the factory it wraps, the SDK writes through the layer, and finds the
// optional interfaces of the destination under it through Unwrap; a
// layer without Unwrap hides them.
func TestWrapLayersEveryDestination(t *testing.T) {
	is := is.New(t)
	concurrent := NewDestination(func(nopConfig) (concurrentNop, error) { return concurrentNop{}, nil })
	writes := 0
	c := Connector{Name: "c", Version: "v0.1.0", Destination: concurrent.Wrap(func(d Destination) Destination { return counting{d, &writes} })}
	spec, err := c.Specification()
	is.NoErr(err)
	unwrapped, err := Connector{Name: "c", Version: "v0.1.0", Destination: concurrent}.Specification()
	is.NoErr(err)
	is.Equal(spec, unwrapped) // the same parameters

	d, err := configureDestination(c, map[string]string{"sdk.write.concurrency": "4"})
	is.NoErr(err)
	is.Equal(d.Concurrency, plugin.Concurrency{Max: 4, ByKey: true}) // WriteSplit found under the layer
	_, err = d.Write(t.Context(), []Record{{Position: Position("1")}})
	is.NoErr(err)
	is.Equal(writes, 1) // through the layer

	c.Destination = concurrent.Wrap(func(d Destination) Destination { return hiding{d} })
	_, err = configureDestination(c, map[string]string{"sdk.write.concurrency": "4"})
	is.True(err != nil) // without Unwrap, the layer writes one batch at a time
	d, err = configureDestination(c, map[string]string{})
	is.NoErr(err)
	is.Equal(d.Concurrency, plugin.Concurrency{Max: 1})
}

// TestWrapKeepsWhatIsNotBuilt: wrap sees only what was built; the zero
// Factory stays a role not played, and a malformed config struct keeps
// its error.
func TestWrapKeepsWhatIsNotBuilt(t *testing.T) {
	is := is.New(t)
	called := false
	wrap := func(d Destination) Destination { called = true; return d }
	_, err := NewDestination(newNop).Wrap(wrap).New(map[string]string{"level": "loud"})
	is.True(err != nil)
	is.True(!called) // not for a configuration refused

	is.True(!Factory[Destination]{}.Wrap(wrap).isSet()) // the role is still not played
	_, err = Connector{Name: "c", Version: "v0.1.0", Destination: NewDestination(newClashing).Wrap(wrap)}.Specification()
	is.True(err != nil) // the config struct's error is kept
	is.True(!called)
}
