package sdk

import (
	"time"

	"github.com/connkit/connkit/batcher"
	"github.com/connkit/connkit/middleware"
)

// Batching is the batching policy's settings: the sdk.batch.* parameters
// every source and destination has. The plugin server runs the policy: it
// decides which records reach one Write of a destination, and which travel
// in one message from a source.
//
// Batches size themselves (group commit): whenever the destination is free
// to write, or Conduit to take a source's next message, everything that has
// arrived so far, up to Size records and Bytes bytes, goes in one batch.
// Conduit's v2 engine takes a source's next message only once it has acked
// the last: there, a due batch waits for those acks, at most 10 ms and no
// longer than the last message took. An idle pipeline writes each record
// at once, a busy one writes large batches, and no batch waits for records
// that may not come unless Delay says it may. What a plugin holds ahead of
// its connector is bounded (two batches' worth; 2048 records and 8 MiB when
// Size and Bytes set no limit): while it is full, the plugin stops
// receiving, and gRPC's flow control pushes back on Conduit (a plugin
// receives or reads at most about 256 records or 256 KiB beyond the bound
// before it stops). Stop and Teardown write or send what is held without
// waiting.
//
// The values a [Connector] gives are the parameters' defaults, which a
// pipeline may override; the SDK's are [DefaultBatching]'s: no count
// limit, no delay, 3932160 bytes (3.75 MiB).
type Batching struct {
	Size  int           `param:"sdk.batch.size" validate:"gt=-1" desc:"Maximum number of records in a batch; 0 means no count limit (sdk.batch.bytes bounds it). A batch is whatever has arrived, up to this many, when the connector is free (destinations) or Conduit takes the next message (sources): it never waits to fill unless sdk.batch.delay is set."`
	Delay time.Duration `param:"sdk.batch.delay" validate:"gt=-1" desc:"The longest an incomplete batch may wait to fill, from its oldest record on; 0 means it does not wait. A batch that reaches sdk.batch.size or sdk.batch.bytes goes at once."`
	Bytes int           `param:"sdk.batch.bytes" validate:"gt=-1" desc:"Maximum size of a batch in bytes, which bounds memory; a larger record travels alone. 0 means no byte limit. The default fits one of Conduit's messages (4 MiB); a source's messages are split to fit Conduit's limit whatever this says."`
}

// DefaultBatching returns the batching defaults of a [Connector] that sets
// none: no count limit, no delay, and at most Conduit's default message
// size (4 MiB) less room for what a message carries besides the records,
// 4 MiB − 256 KiB.
func DefaultBatching() Batching { return Batching{Bytes: 4<<20 - 256<<10} }

// policy returns the policy the plugin server runs for b.
func (b Batching) policy(middleware.Env) (batcher.Policy, error) {
	return batcher.Policy{Count: b.Size, Delay: b.Delay, Bytes: b.Bytes}, nil
}
