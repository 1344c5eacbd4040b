// Command faulty is a destination plugin for tests whose Write misbehaves on
// request: a record whose raw payload is "panic" makes it panic, "fail"
// makes it fail at that record, "short" makes it return a short write
// without an error, "block" makes it block until its context ends, "fault"
// makes it report that record as a record fault, and "flaky" makes it fail
// with a retryable error the first time it sees that record.
package main

import (
	"context"
	"errors"

	"github.com/connkit/connkit/sdk"
)

type config struct{}

type destination struct {
	flaked map[string]bool // the positions of "flaky" records that failed once
}

func (*destination) Open(context.Context) error     { return nil }
func (*destination) Teardown(context.Context) error { return nil }

func (d *destination) Write(ctx context.Context, records []sdk.Record) (int, error) {
	for i, r := range records {
		switch string(r.Payload.After.Bytes()) {
		case "block":
			<-ctx.Done()
			return i, ctx.Err()
		case "fault":
			return i, sdk.RecordFault(errors.New("asked to fault"))
		case "flaky":
			if !d.flaked[string(r.Position)] {
				d.flaked[string(r.Position)] = true
				return i, sdk.Retryable(errors.New("asked to flake"))
			}
		case "panic":
			panic("asked to panic")
		case "fail":
			return i, errors.New("asked to fail")
		case "short":
			return i, nil
		}
	}
	return len(records), nil
}

func main() {
	sdk.Serve(sdk.Connector{
		Name:        "faulty",
		Version:     "v0.0.1",
		Destination: sdk.NewDestination(func(config) (*destination, error) { return &destination{flaked: map[string]bool{}}, nil }),
	})
}
