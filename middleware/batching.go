package middleware

import (
	"time"

	"github.com/connkit/connkit/batcher"
)

// Batching is the batching middleware's configuration, the same for sources
// and destinations. All zero means no batching: each of Conduit's messages
// is written as it arrives, and each record read is sent on its own.
type Batching struct {
	Size  int           `param:"sdk.batch.size" default:"0" validate:"gt=-1" desc:"Maximum number of records in a batch; 0 means no count limit."`
	Delay time.Duration `param:"sdk.batch.delay" default:"0" validate:"gt=-1" desc:"Maximum time a batch waits after its first record before it is written (destinations) or sent (sources); 0 means no time limit."`
	Bytes int           `param:"sdk.batch.bytes" default:"0" validate:"gt=-1" desc:"Maximum size of a batch in bytes, which bounds memory and keeps messages under gRPC's limit; a larger record travels alone. 0 means no byte limit."`
}

// Policy returns the batching policy these settings describe.
func (b Batching) Policy() batcher.Policy {
	return batcher.Policy{Count: b.Size, Delay: b.Delay, Bytes: b.Bytes}
}

// ForDestination returns [BatchDestination] with these settings.
func (b Batching) ForDestination() Middleware[Destination] { return BatchDestination(b.Policy()) }

// ForSource returns [BatchSource] with these settings.
func (b Batching) ForSource() Middleware[Source] { return BatchSource(b.Policy()) }

// BatchDestination asks the plugin server to write records in batches under
// p: it collects records across Conduit's messages and calls Write once a
// batch is complete, while it collects the next one. The zero policy returns
// the destination unchanged.
func BatchDestination(p batcher.Policy) Middleware[Destination] {
	return func(d Destination) Destination {
		if p == (batcher.Policy{}) {
			return d
		}
		return batchedDestination{Destination: d, policy: p}
	}
}

// BatchSource asks the plugin server to send records to Conduit in messages
// of batches under p. The zero policy returns the source unchanged.
func BatchSource(p batcher.Policy) Middleware[Source] {
	return func(s Source) Source {
		if p == (batcher.Policy{}) {
			return s
		}
		return batchedSource{Source: s, policy: p}
	}
}

// PolicyOf returns the batching policy of the outermost layer of c, a
// Source or Destination, that has one.
func PolicyOf(c any) (batcher.Policy, bool) {
	b, ok := Find[interface{ BatchPolicy() batcher.Policy }](c)
	if !ok {
		return batcher.Policy{}, false
	}
	return b.BatchPolicy(), true
}

// batchedDestination carries a policy for the plugin server; its methods are
// the wrapped destination's.
type batchedDestination struct {
	Destination
	policy batcher.Policy
}

func (b batchedDestination) BatchPolicy() batcher.Policy { return b.policy }
func (b batchedDestination) Unwrap() Destination         { return b.Destination }

type batchedSource struct {
	Source
	policy batcher.Policy
}

func (b batchedSource) BatchPolicy() batcher.Policy { return b.policy }
func (b batchedSource) Unwrap() Source              { return b.Source }
