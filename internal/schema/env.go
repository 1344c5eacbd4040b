package schema

import (
	"io"

	"github.com/conduitio/conduit-connector-protocol/pconnutils"
)

// FromEnv returns the registry a connector plugin should use, reading the
// environment through getenv (os.Getenv in production): a [Cached] [Client]
// for the schema service named by CONDUIT_CONNECTOR_UTILITIES_GRPC_TARGET,
// presenting CONDUIT_CONNECTOR_TOKEN, when the target is set; otherwise a
// Cached registry from [NewInMemory]. The caller closes the Closer when done
// with the registry; for the in-memory one Close does nothing.
func FromEnv(getenv func(string) string) (Registry, io.Closer, error) {
	target := getenv(pconnutils.EnvConduitConnectorUtilitiesGRPCTarget)
	if target == "" {
		return Cached(NewInMemory()), nopCloser{}, nil
	}
	c, err := Dial(target, getenv(pconnutils.EnvConduitConnectorToken))
	if err != nil {
		return nil, nil, err
	}
	return Cached(c), c, nil
}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }
