package sdk

import "github.com/connkit/connkit/middleware"

// Destination writes records to a system; Write follows io.Writer. See
// [middleware.Destination] for the contract, which the SDK enforces.
type Destination = middleware.Destination
