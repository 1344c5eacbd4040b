package plugin

import (
	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/proto" // registers the codec wireCodec defers to
	"google.golang.org/grpc/mem"
)

// wireMessage is a message that decodes itself from protobuf wire bytes.
type wireMessage interface {
	unmarshalWire(b []byte) error
}

// wireEncoder is a message that encodes itself to protobuf wire bytes.
type wireEncoder interface {
	marshalWire() ([]byte, error)
}

// wireCodec is gRPC's protobuf codec, except that messages implementing
// wireMessage or wireEncoder decode or encode themselves. Everything on the
// wire stays protobuf.
type wireCodec struct{ proto encoding.CodecV2 }

func newWireCodec() wireCodec { return wireCodec{encoding.GetCodecV2("proto")} }

func (c wireCodec) Name() string { return c.proto.Name() }

func (c wireCodec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(wireEncoder)
	if !ok {
		return c.proto.Marshal(v)
	}
	b, err := m.marshalWire()
	if err != nil {
		return nil, err
	}
	return mem.BufferSlice{mem.SliceBuffer(b)}, nil
}

func (c wireCodec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(wireMessage)
	if !ok {
		return c.proto.Unmarshal(data, v)
	}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	return m.unmarshalWire(buf.ReadOnlyData())
}

// encodedMessage is a message already in its wire form.
type encodedMessage []byte

func (m encodedMessage) marshalWire() ([]byte, error) { return m, nil }
