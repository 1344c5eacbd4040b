package sdk

import "github.com/connkit/connkit/middleware"

// The optional lifecycle hooks a [Source] or [Destination] may implement;
// see [middleware.CreatedHook].
type (
	CreatedHook = middleware.CreatedHook
	UpdatedHook = middleware.UpdatedHook
	DeletedHook = middleware.DeletedHook
)
