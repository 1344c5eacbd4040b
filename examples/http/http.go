// Package httpsink is a destination that POSTs each batch of records to an
// HTTP endpoint as a JSON array: the reference for a destination bound by
// latency rather than by throughput, which takes concurrent Writes
// ([sdk.ConcurrentDestination]) so that the SDK can keep several requests
// in flight.
//
// It is written as a connector outside this module would be: with the
// public API only (package sdk), and tested with package sdk/sdktest. Its
// directory is examples/http; its package is named httpsink so that it
// does not shadow net/http where both are imported.
//
// # Responses
//
// A 2xx writes the batch. A 429 or a 5xx is the server's failure: the
// Write is [sdk.RetryableAfter] the response's Retry-After; a 408 is
// [sdk.Retryable]. Another 4xx refuses the batch for its data: the
// destination halves the batch and sends each half in turn, down to the
// one record at fault, which it returns as an [sdk.RecordFault], so that
// the records before it are written once each and no other record is
// blamed. A few 4xx statuses refuse any request, whatever records it holds
// (401, 403, 404, 405, 407, 415): they fail the Write as they are, as does
// a redirect that would turn the POST into a GET. A network error or a
// timeout is [sdk.Retryable].
package httpsink

import (
	"github.com/connkit/connkit/sdk"
)

// Connector is the http plugin: a destination.
var Connector = sdk.Connector{
	Name:        "http",
	Version:     "v0.1.0",
	Summary:     "POSTs each batch of records to an HTTP endpoint as a JSON array.",
	Description: "Each Write sends its records in one POST request, a JSON array whose elements are the records in the record format (OpenCDC JSON unless sdk.record.format says otherwise). A 2xx writes them; a 429 or a 5xx is retried after its Retry-After; another 4xx is narrowed down, by halving the batch, to the record the server refuses, which alone is nacked. Writes run concurrently (sdk.write.concurrency).",
	Author:      "connkit",
	Destination: sdk.NewDestination(NewDestination),
}
