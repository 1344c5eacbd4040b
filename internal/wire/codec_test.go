package wire

import (
	"testing"

	"github.com/matryer/is"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

type received struct{ b []byte }

func (r *received) UnmarshalWire(b []byte) error {
	r.b = append([]byte(nil), b...)
	return nil
}

// Messages that encode or decode themselves do; any other message goes
// through gRPC's protobuf codec, and both are the same protobuf.
func TestCodec(t *testing.T) {
	is := is.New(t)
	c := NewCodec()
	is.Equal(c.Name(), "proto")

	msg := wrapperspb.String("hello")
	generated, err := c.Marshal(msg)
	is.NoErr(err)
	want, err := proto.Marshal(msg)
	is.NoErr(err)
	is.Equal(generated.Materialize(), want)

	own, err := c.Marshal(Encoded(want))
	is.NoErr(err)
	is.Equal(own.Materialize(), want)

	var r received
	is.NoErr(c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(want)}, &r))
	is.Equal(r.b, want)
	var back wrapperspb.StringValue
	is.NoErr(c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(want)}, &back))
	is.Equal(back.GetValue(), "hello")
}
