// Command brokenplugin is a plugin for the test kit's own tests, with a
// bug in each role, so that they can see the suite find bugs over the
// protocol: its source restarts from the beginning whatever position it
// is given, and its destination's Write reports one record fewer than it
// wrote, without an error.
package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/connkit/connkit/sdk"
)

type config struct{}

type source struct{ next int }

func (s *source) Open(context.Context, sdk.Position) error { return nil } // the bug: from is ignored
func (s *source) Teardown(context.Context) error           { return nil }

func (s *source) Read(ctx context.Context) (sdk.Record, error) {
	if err := ctx.Err(); err != nil {
		return sdk.Record{}, err
	}
	s.next++
	return sdk.Record{
		Position:  sdk.Position(strconv.Itoa(s.next)),
		Operation: sdk.OperationCreate,
		Key:       sdk.RawData(strconv.Itoa(s.next)),
		Payload:   sdk.Change{After: sdk.RawData(fmt.Sprintf(`{"id":%d}`, s.next))},
	}, nil
}

type destination struct{}

func (destination) Open(context.Context) error     { return nil }
func (destination) Teardown(context.Context) error { return nil }

func (destination) Write(_ context.Context, records []sdk.Record) (int, error) {
	if len(records) > 1 {
		return len(records) - 1, nil // the bug: a short write without an error
	}
	return len(records), nil
}

func main() {
	sdk.Serve(sdk.Connector{
		Name:        "fake",
		Version:     "v0.1.0",
		Source:      sdk.NewSource(func(config) (*source, error) { return &source{}, nil }),
		Destination: sdk.NewDestination(func(config) (destination, error) { return destination{}, nil }),
	})
}
