package plugin

import (
	"context"

	"github.com/conduitio/conduit-connector-protocol/pconnector"
)

type specifier pconnector.Specification

func (s specifier) Specify(context.Context, pconnector.SpecifierSpecifyRequest) (pconnector.SpecifierSpecifyResponse, error) {
	return pconnector.SpecifierSpecifyResponse{Specification: pconnector.Specification(s)}, nil
}
