package middleware

import (
	"time"

	"github.com/connkit/connkit/batcher"
)

// Batching is the batching settings, the same for sources and destinations.
// Batching is not a wrapper: the plugin server decides when Write is called
// and what goes into a message, so the SDK hands it [Batching.Policy]. All
// zero means no batching: each of Conduit's messages is written as it
// arrives, and each record read is sent on its own.
type Batching struct {
	Size  int           `param:"sdk.batch.size" validate:"gt=-1" desc:"Maximum number of records in a batch; 0 means no count limit."`
	Delay time.Duration `param:"sdk.batch.delay" validate:"gt=-1" desc:"Maximum time a batch waits after its first record before it is written (destinations) or sent (sources); 0 means no time limit."`
	Bytes int           `param:"sdk.batch.bytes" validate:"gt=-1" desc:"Maximum size of a batch in bytes, which bounds memory and keeps messages under gRPC's limit; a larger record travels alone. 0 means no byte limit."`
}

// Policy returns the batching policy these settings describe.
func (b Batching) Policy() batcher.Policy {
	return batcher.Policy{Count: b.Size, Delay: b.Delay, Bytes: b.Bytes}
}

// ForSource returns nil: the plugin server batches (see [Batching]).
func (Batching) ForSource(Env) (Middleware[Source], error) { return nil, nil }

// ForDestination returns nil: the plugin server batches (see [Batching]).
func (Batching) ForDestination(Env) (Middleware[Destination], error) { return nil, nil }
