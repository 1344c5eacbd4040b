package sdk

import "github.com/connkit/connkit/middleware"

// Source reads records from a system; see [middleware.Source] for the
// contract.
type Source = middleware.Source

// Acker is implemented by sources that need acknowledgements; see
// [middleware.Acker].
type Acker = middleware.Acker

// BatchReader is implemented by sources that can read several records at
// once; see [middleware.BatchReader].
type BatchReader = middleware.BatchReader
