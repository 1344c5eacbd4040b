package middleware

import (
	"time"

	"github.com/connkit/connkit/batcher"
)

// Batching is the batching settings, the same for sources and destinations.
// Batching is not a wrapper: the plugin server decides when Write is called
// and what goes into a message, so the SDK hands it [Batching.Policy].
//
// Batches size themselves (group commit): whenever the connector is free to
// write (a destination) or Conduit to take a message (a source), everything
// received or read so far, up to Size and Bytes, goes in one batch. An idle
// pipeline writes each record at once, a busy one writes large batches, and
// no batch waits for records that may not come, unless Delay says it may.
type Batching struct {
	Size  int           `param:"sdk.batch.size" validate:"gt=-1" desc:"Maximum number of records in a batch; 0 means no count limit (sdk.batch.bytes bounds it). A batch is whatever has arrived, up to this many, when the connector is free (destinations) or Conduit takes the next message (sources): it never waits to fill unless sdk.batch.delay is set."`
	Delay time.Duration `param:"sdk.batch.delay" validate:"gt=-1" desc:"The longest an incomplete batch may wait to fill, from its oldest record on; 0 means it does not wait. A batch that reaches sdk.batch.size or sdk.batch.bytes goes at once."`
	Bytes int           `param:"sdk.batch.bytes" validate:"gt=-1" desc:"Maximum size of a batch in bytes, which bounds memory; a larger record travels alone. 0 means no byte limit. The default fits one of Conduit's messages (4 MiB); a source's messages are split to fit Conduit's limit whatever this says."`
}

// DefaultBatchBytes is sdk.batch.bytes unless a connector says otherwise:
// Conduit's default message limit (CONDUIT_CONNECTOR_MAX_RECEIVE_RECORD_SIZE,
// 4 MiB) less room for what a message carries besides the records.
const DefaultBatchBytes = 4<<20 - 256<<10

// Policy returns the batching policy these settings describe.
func (b Batching) Policy() batcher.Policy {
	return batcher.Policy{Count: b.Size, Delay: b.Delay, Bytes: b.Bytes}
}

// ForSource returns nil: the plugin server batches (see [Batching]).
func (Batching) ForSource(Env) (Middleware[Source], error) { return nil, nil }

// ForDestination returns nil: the plugin server batches (see [Batching]).
func (Batching) ForDestination(Env) (Middleware[Destination], error) { return nil, nil }
