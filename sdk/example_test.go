package sdk_test

import (
	"context"
	"fmt"

	"github.com/connkit/connkit/sdk"
)

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
