package sdk_test

import (
	"context"
	"fmt"
	"time"

	"github.com/connkit/connkit/sdk"
)

func ExampleParseConfig() {
	type Config struct {
		URL   string        `param:"url" validate:"required" desc:"Where to connect."`
		Delay time.Duration `param:"delay" default:"1s" desc:"How long to wait."`
	}
	var cfg Config
	err := sdk.ParseConfig(map[string]string{"url": "pg://localhost", "dealy": "2s"}, &cfg)
	fmt.Println(err)
	err = sdk.ParseConfig(map[string]string{"url": "pg://localhost"}, &cfg)
	fmt.Println(err, cfg.URL, cfg.Delay)
	// Output:
	// parameter "dealy": is not a known parameter (did you mean "delay"?)
	// <nil> pg://localhost 1s
}

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
