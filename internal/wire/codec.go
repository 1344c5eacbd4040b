package wire

import (
	"bytes"

	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/proto" // registers the codec Codec defers to
	"google.golang.org/grpc/mem"
)

// Marshaler is a message that encodes itself to protobuf wire bytes.
type Marshaler interface {
	MarshalWire() ([]byte, error)
}

// Unmarshaler is a message that decodes itself from protobuf wire bytes.
// The bytes are only lent: UnmarshalWire copies what it keeps.
type Unmarshaler interface {
	UnmarshalWire(b []byte) error
}

// Codec is gRPC's protobuf codec, except that a Marshaler encodes itself,
// a Lent message is sent as it is, and an Unmarshaler decodes itself.
// Everything on the wire stays protobuf.
type Codec struct{ proto encoding.CodecV2 }

// NewCodec returns a Codec.
func NewCodec() Codec { return Codec{encoding.GetCodecV2("proto")} }

// Name is the name of gRPC's protobuf codec.
func (c Codec) Name() string { return c.proto.Name() }

// Marshal encodes v.
func (c Codec) Marshal(v any) (mem.BufferSlice, error) {
	if l, ok := v.(Lent); ok {
		b := mem.NewBuffer(l.Buf, l.From)
		if _, unpooled := b.(mem.SliceBuffer); !unpooled {
			return mem.BufferSlice{b}, nil
		}
		// gRPC gives back no buffer this small (1 KiB or less): send a copy,
		// and the buffer goes back now.
		msg := bytes.Clone(*l.Buf)
		l.From.Put(l.Buf)
		return mem.BufferSlice{mem.SliceBuffer(msg)}, nil
	}
	m, ok := v.(Marshaler)
	if !ok {
		return c.proto.Marshal(v)
	}
	b, err := m.MarshalWire()
	if err != nil {
		return nil, err
	}
	return mem.BufferSlice{mem.SliceBuffer(b)}, nil
}

// Unmarshal decodes data into v.
func (c Codec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(Unmarshaler)
	if !ok {
		return c.proto.Unmarshal(data, v)
	}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	return m.UnmarshalWire(buf.ReadOnlyData())
}

// Encoded is a message already in its wire form.
type Encoded []byte

// MarshalWire returns m itself.
func (m Encoded) MarshalWire() ([]byte, error) { return m, nil }
