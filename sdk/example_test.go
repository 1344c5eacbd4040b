package sdk_test

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/conduitio/conduit-connector-protocol/pconnector"
	clientv2 "github.com/conduitio/conduit-connector-protocol/pconnector/v2/client"
	"github.com/connkit/connkit/sdk"
	"github.com/connkit/connkit/sdk/config"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
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

func ExampleNewSource() {
	type Config struct {
		From int `param:"from" default:"1" validate:"gt=0" desc:"The first number."`
	}
	source := sdk.NewSource(func(cfg Config) (*Numbers, error) { return &Numbers{n: cfg.From - 1}, nil })
	s, _ := source.New(map[string]string{"from": "41"})
	r, _ := s.Read(context.Background())
	fmt.Println(string(r.Position))
	_, err := source.New(map[string]string{"from": "0"})
	fmt.Println(err)
	// Output:
	// 41
	// invalid configuration: parameter "from": got "0", expected at least 1
}

// A connector changes the default of one sdk.* parameter, by name, and
// keeps the SDK's for the others; a pipeline may still override each.
func ExampleConnector_destinationDefaults() {
	connector := sdk.Connector{
		Name:                "counter",
		Version:             "v0.1.0",
		Destination:         sdk.NewDestination(func(struct{}) (*Counter, error) { return &Counter{}, nil }),
		DestinationDefaults: map[string]string{"sdk.batch.size": "1000"},
	}
	spec, _ := connector.Specification()
	printDefaults(spec.DestinationParameters)
	// Output:
	// sdk.batch.bytes="3932160"
	// sdk.batch.delay="0"
	// sdk.batch.size="1000"
	// sdk.metrics.address=""
	// sdk.metrics.logInterval="1m"
	// sdk.rate.burst="0"
	// sdk.rate.perSecond="0"
	// sdk.record.format="opencdc/json"
	// sdk.record.format.options=""
	// sdk.retry.attempts="8"
	// sdk.retry.delay="100ms"
	// sdk.retry.maxDelay="10s"
	// sdk.schema.extract.key.enabled="true"
	// sdk.schema.extract.payload.enabled="true"
	// sdk.write.concurrency="auto"
}

// printDefaults prints each parameter's default.
func printDefaults(params []config.Parameter) {
	for _, p := range params {
		fmt.Printf("%s=%q\n", p.Name, p.Default)
	}
}

// A source turns payload schema extraction off and keeps every other
// default: the payload subject, the key's extraction, batching.
func ExampleConnector_sourceDefaults() {
	spec, _ := sdk.Connector{
		Name:           "numbers",
		Version:        "v0.1.0",
		Source:         sdk.NewSource(func(struct{}) (*Numbers, error) { return &Numbers{}, nil }),
		SourceDefaults: map[string]string{"sdk.schema.extract.payload.enabled": "false"},
	}.Specification()
	printDefaults(spec.SourceParameters)
	// Output:
	// sdk.batch.bytes="3932160"
	// sdk.batch.delay="0"
	// sdk.batch.size="0"
	// sdk.metrics.address=""
	// sdk.metrics.logInterval="1m"
	// sdk.schema.context.enabled="true"
	// sdk.schema.context.name=""
	// sdk.schema.extract.key.enabled="true"
	// sdk.schema.extract.key.subject="key"
	// sdk.schema.extract.payload.enabled="false"
	// sdk.schema.extract.payload.subject="payload"
	// sdk.schema.extract.type="avro"
}

// A default the parameter does not take, or a name that is not one of the
// role's sdk.* parameters, makes the Connector invalid: Serve says why.
func ExampleConnector_badDefaults() {
	connector := sdk.Connector{
		Name:                "counter",
		Version:             "v0.1.0",
		Destination:         sdk.NewDestination(func(struct{}) (*Counter, error) { return &Counter{}, nil }),
		DestinationDefaults: map[string]string{"sdk.retry.attempts": "many", "sdk.batch.sise": "10"},
	}
	_, err := connector.Specification()
	fmt.Println(err)
	// Output:
	// sdk: Connector.DestinationDefaults: parameter "sdk.batch.sise": is not a known parameter (did you mean "sdk.batch.size"?); parameter "sdk.retry.attempts": got "many", expected an integer
}

// A factory sees only valid configurations, and can still refuse one, best
// with a *config.ParameterError that names the parameter at fault.
func ExampleNewDestination_validation() {
	type Config struct {
		Fields []string `param:"fields" validate:"required" desc:"Comma-separated fields to write."`
		Key    string   `param:"key" default:"id" desc:"The field that identifies a record; one of fields."`
	}
	factory := sdk.NewDestination(func(cfg Config) (*Counter, error) {
		if !slices.Contains(cfg.Fields, cfg.Key) {
			return nil, &config.ParameterError{Name: "key", Value: cfg.Key, Expected: "one of fields: " + strings.Join(cfg.Fields, ", ")}
		}
		return &Counter{}, nil
	})
	_, err := factory.New(map[string]string{"fields": "name,email"})
	fmt.Println(err)
	// Output: invalid configuration: parameter "key": got "id", expected one of fields: name, email
}

// Counted is a layer that prints each Write of the destination it wraps.
type Counted struct{ sdk.Destination }

func (c Counted) Write(ctx context.Context, records []sdk.Record) (int, error) {
	n, err := c.Destination.Write(ctx, records)
	fmt.Printf("wrote %d of %d\n", n, len(records))
	return n, err
}

// Unwrap names the destination under the layer, where the SDK finds its
// optional interfaces.
func (c Counted) Unwrap() sdk.Destination { return c.Destination }

// A test puts a layer over every destination a factory builds; a copy of
// the Connector with the wrapped factory serves them so.
func ExampleFactory_Wrap() {
	counter := sdk.NewDestination(func(struct{}) (*Counter, error) { return &Counter{}, nil })
	wrapped := counter.Wrap(func(d sdk.Destination) sdk.Destination { return Counted{d} })
	d, _ := wrapped.New(nil)
	_, _ = d.Write(context.Background(), []sdk.Record{sdk.Create(sdk.Position("1"), nil, nil, sdk.RawData("a"))})
	// Output: wrote 1 of 1
}

// A test serves a Connector in its own process and drives it over the
// protocol with the protocol's client, as Conduit does.
func ExampleNewServer() {
	srv, err := sdk.NewServer(sdk.Connector{
		Name:        "counter",
		Version:     "v0.1.0",
		Destination: sdk.NewDestination(func(struct{}) (*Counter, error) { return &Counter{}, nil }),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()

	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close()
	resp, err := clientv2.NewSpecifierPluginClient(conn).Specify(context.Background(), pconnector.SpecifierSpecifyRequest{})
	fmt.Println(resp.Specification.Name, resp.Specification.Version, err)
	_, err = clientv2.NewDestinationPluginClient(conn).Configure(context.Background(), pconnector.DestinationConfigureRequest{Config: map[string]string{"sdk.batch.size": "many"}})
	fmt.Println(err)

	srv.Stop()
	fmt.Println(<-served)
	// Output:
	// counter v0.1.0 <nil>
	// invalid configuration: parameter "sdk.batch.size": got "many", expected an integer
	// <nil>
}
