package plugin

import (
	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/batcher"
	"github.com/connkit/connkit/middleware"
)

// The connector interfaces, declared in package middleware.
type (
	Source      = middleware.Source
	Destination = middleware.Destination
)

// Connector is what a plugin binary serves: its specification and the
// constructors that turn a raw configuration into a configured connector
// and the policies the server applies to it. A nil constructor means the
// plugin does not play that role.
type Connector struct {
	Spec           pconnector.Specification
	NewSource      func(config map[string]string) (Source, batcher.Policy, error)
	NewDestination func(config map[string]string) (Destination, DestinationPolicy, error)
}

// DestinationPolicy is how the server drives a destination: which records
// each Write gets, and what it does when a Write fails with a retryable
// error. The zero value writes each message as it arrives and never retries.
type DestinationPolicy struct {
	Batch batcher.Policy
	Retry middleware.Retry
}

// source is a configured source with its batching policy and the optional
// interfaces it has, resolved once, at Configure.
type source struct {
	Source
	batch  batcher.Policy
	acker  middleware.Acker       // nil if the source takes no acks
	reader middleware.BatchReader // nil if the source reads one record at a time
}

func newSource(s Source, batch batcher.Policy) *source {
	out := &source{Source: s, batch: batch}
	out.acker, _ = middleware.Find[middleware.Acker](s)
	out.reader, _ = middleware.Find[middleware.BatchReader](s)
	return out
}

// destination is a configured destination with its batching and retry
// policies.
type destination struct {
	Destination
	batch batcher.Policy
	retry middleware.Retry
}
