package plugin

import (
	"context"
	"time"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/batcher"
	"github.com/connkit/connkit/internal/metrics"
)

// Factory is what a plugin serves: its specification, and how a source or
// a destination is configured from the raw configuration Conduit sends.
// Package sdk implements it for an sdk.Connector; a connector that does
// not play a role returns an error that says so.
type Factory interface {
	Specification() pconnector.Specification
	ConfigureSource(config map[string]string) (Source, error)
	ConfigureDestination(config map[string]string) (Destination, error)
}

// Calls are the calls of a configured connector that both roles have,
// and what the server measures of it.
type Calls struct {
	// Open is called once, before Run; a destination's gets no position.
	Open     func(ctx context.Context, from opencdc.Position) error
	Teardown func(ctx context.Context) error
	// The lifecycle hooks; a nil one succeeds.
	OnCreated func(ctx context.Context) error
	OnUpdated func(ctx context.Context, previous map[string]string) error
	OnDeleted func(ctx context.Context) error
	Metrics   Metrics
}

// Metrics are what the server measures of a connector instance, and where
// it shows it, from Open to Teardown.
type Metrics struct {
	Set      *metrics.Set  // nil: nothing is measured
	Address  string        // where Set is served in the Prometheus text format, at /metrics; empty: nowhere
	LogEvery time.Duration // how often a progress line is logged while records move; 0: never
}

// Source is a configured source as the server runs it: the connector's
// calls and the policy that drives them, resolved once, at Configure.
type Source struct {
	Calls
	// Read returns between 1 and max records, or an error; when ctx is
	// done it returns ctx.Err() and no records.
	Read func(ctx context.Context, max int) ([]opencdc.Record, error)
	// Batched says Read may return more than one record, so the server
	// chooses max; otherwise it returns one at a time.
	Batched bool
	Ack     func(ctx context.Context, position opencdc.Position) error // nil: the source takes no acks
	Batch   batcher.Policy                                             // which records travel in one message
}

// Destination is a configured destination as the server runs it: the
// connector's calls and the policies that drive them, resolved once, at
// Configure.
type Destination struct {
	Calls
	// Write follows the Write contract of package sdk's Destination.
	Write func(ctx context.Context, records []opencdc.Record) (int, error)
	Batch batcher.Policy // which records one Write gets
	Retry Retry          // what a retryable failure does
	// Classify says whose failure a Write error is; nil treats every error
	// as unclassified.
	Classify func(error) Fault
	// Concurrency is how many Writes may be in flight together; the zero
	// value is one at a time.
	Concurrency Concurrency
}

// Concurrency is how many Writes a destination may have in flight
// together. Their records are acked in order, whatever order they end in.
type Concurrency struct {
	Max int // the most; 0 and 1 are one at a time
	// Adaptive starts at one Write and finds how many the destination
	// takes, up to Max, from each Write's duration and its retryable
	// errors; otherwise Max are in flight whenever there are records.
	Adaptive bool
	// ByKey hands a record to a Write only once every earlier record with
	// its key is settled; otherwise any record may go in any Write.
	ByKey bool
}

// Fault says whose failure a Write error is, which decides what happens to
// the records from the first one not written on.
type Fault int

const (
	// Unclassified: the first record not written is nacked with the error,
	// and each later one as not attempted.
	Unclassified Fault = iota
	// RecordFault: the first record not written is nacked alone, and the
	// rest go to the next Write.
	RecordFault
	// Retryable: the records not written are written again after a backoff
	// (see [Retry]).
	Retryable
)
