package sdk_test

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/connkit/connkit/middleware"
	"github.com/connkit/connkit/sdk"
)

// Numbers is a source of increasing numbers.
type Numbers struct{ n int }

func (s *Numbers) Open(context.Context, sdk.Position) error { return nil }
func (s *Numbers) Read(context.Context) (sdk.Record, error) {
	s.n++
	pos := sdk.Position(strconv.Itoa(s.n))
	return sdk.Create(pos, nil, nil, sdk.RawData(pos)), nil
}
func (s *Numbers) Teardown(context.Context) error { return nil }

// Counter is a destination that counts what it is given.
type Counter struct{ n int }

func (c *Counter) Open(context.Context) error { return nil }
func (c *Counter) Write(_ context.Context, records []sdk.Record) (int, error) {
	c.n += len(records)
	return len(records), nil
}
func (c *Counter) Teardown(context.Context) error { return nil }

func ExampleNewDestination() {
	type Config struct {
		Prefix string `param:"prefix" default:"n=" desc:"Printed before the count."`
	}
	connector := sdk.Connector{
		Name:    "counter",
		Version: "v0.1.0",
		Destination: sdk.NewDestination(func(cfg Config) (*Counter, error) {
			return &Counter{}, nil
		}),
	}
	spec, err := connector.Specification()
	fmt.Println(spec.DestinationParameters[0].Name, spec.DestinationParameters[0].Default, err)
	// Output: prefix n= <nil>
}

// A connector changes the defaults of one group of sdk.* parameters and
// keeps the SDK's for the others; a pipeline may still override each.
func ExampleConnector_defaults() {
	batching := sdk.DefaultBatching()
	batching.Size = 1000
	connector := sdk.Connector{
		Name:        "counter",
		Version:     "v0.1.0",
		Destination: sdk.NewDestination(func(struct{}) (*Counter, error) { return &Counter{}, nil }),
		Batching:    &batching,
	}
	spec, _ := connector.Specification()
	for _, p := range spec.DestinationParameters {
		switch p.Name {
		case "sdk.batch.size", "sdk.batch.bytes", "sdk.retry.attempts":
			fmt.Println(p.Name, p.Default)
		}
	}
	// Output:
	// sdk.batch.bytes 3932160
	// sdk.batch.size 1000
	// sdk.retry.attempts 8
}

// A source turns payload schema extraction off and keeps every other
// default: the payload subject, the key's extraction, batching.
func ExampleConnector_schemaEncoding() {
	encoding := middleware.DefaultSchemaEncoding()
	encoding.Payload = false
	connector := sdk.Connector{
		Name:           "numbers",
		Version:        "v0.1.0",
		Source:         sdk.NewSource(func(struct{}) (*Numbers, error) { return &Numbers{}, nil }),
		SchemaEncoding: &encoding,
	}
	spec, _ := connector.Specification()
	for _, p := range spec.SourceParameters {
		fmt.Printf("%s=%q\n", p.Name, p.Default)
	}
	// Output:
	// sdk.batch.bytes="3932160"
	// sdk.batch.delay="0"
	// sdk.batch.size="0"
	// sdk.schema.context.enabled="true"
	// sdk.schema.context.name=""
	// sdk.schema.extract.key.enabled="true"
	// sdk.schema.extract.key.subject="key"
	// sdk.schema.extract.payload.enabled="false"
	// sdk.schema.extract.payload.subject="payload"
	// sdk.schema.extract.type="avro"
}

// Every default of a destination's sdk.* parameters, as a connector that
// sets none has them.
func ExampleConnector_destinationDefaults() {
	connector := sdk.Connector{
		Name:        "counter",
		Version:     "v0.1.0",
		Destination: sdk.NewDestination(func(struct{}) (*Counter, error) { return &Counter{}, nil }),
	}
	spec, _ := connector.Specification()
	for _, p := range spec.DestinationParameters {
		fmt.Printf("%s=%q\n", p.Name, p.Default)
	}
	// Output:
	// sdk.batch.bytes="3932160"
	// sdk.batch.delay="0"
	// sdk.batch.size="0"
	// sdk.rate.burst="0"
	// sdk.rate.perSecond="0"
	// sdk.record.format="opencdc/json"
	// sdk.record.format.options=""
	// sdk.retry.attempts="8"
	// sdk.retry.delay="100ms"
	// sdk.retry.maxDelay="10s"
	// sdk.schema.extract.key.enabled="true"
	// sdk.schema.extract.payload.enabled="true"
}

func ExampleDefaultBatching() {
	fmt.Printf("%+v\n", sdk.DefaultBatching())
	// Output: {Size:0 Delay:0s Bytes:3932160}
}

func ExampleDefaultRetry() {
	fmt.Printf("%+v\n", sdk.DefaultRetry())
	fmt.Println(sdk.Retry{Attempts: 3, Delay: time.Second, MaxDelay: 100 * time.Millisecond}.Validate())
	// Output:
	// {Attempts:8 Delay:100ms MaxDelay:10s}
	// parameter "sdk.retry.maxDelay": got "100ms", expected at least the 1s of "sdk.retry.delay"
}

// Loud is a wrapper that prints each Write; Unwrap keeps the optional
// interfaces of the destination inside visible to the SDK.
type Loud struct{ sdk.Destination }

func (l Loud) Write(ctx context.Context, records []sdk.Record) (int, error) {
	fmt.Println("writing", len(records), "records")
	return l.Destination.Write(ctx, records)
}

func (l Loud) Unwrap() sdk.Destination { return l.Destination }

func ExampleFactory_Wrap() {
	factory := sdk.NewDestination(func(struct{}) (*Counter, error) { return &Counter{}, nil }).
		Wrap(func(d sdk.Destination) sdk.Destination { return Loud{d} })
	d, _ := factory.New(nil)
	n, err := d.Write(context.Background(), make([]sdk.Record, 3))
	fmt.Println(n, err)
	// Output:
	// writing 3 records
	// 3 <nil>
}
