package plugin

import "github.com/connkit/connkit/internal/wire"

// newWireCodec is the codec a plugin serves with: gRPC's protobuf codec,
// except that the Run streams' messages encode and decode themselves.
// Everything on the wire stays protobuf.
func newWireCodec() wire.Codec { return wire.NewCodec() }
