package wire

import (
	"testing"

	"github.com/matryer/is"
)

// A buffer made new has the capacity the messages grew to; an outsized
// one is not kept. (Whether a kept one is lent again is sync.Pool's
// business, which under the race detector drops some on purpose.)
func TestBuffers(t *testing.T) {
	is := is.New(t)
	bufs := Buffers{MaxKept: 1 << 20}

	b := bufs.Get(10)
	is.Equal(len(*b), 10)
	*b = append((*b)[:0], make([]byte, 64<<10)...) // a message grew it
	grown := cap(*b)
	bufs.Put(b)

	is.True(cap(*bufs.Get(0)) >= grown) // the one kept, or a new one as large
	is.Equal(cap(*bufs.Get(0)), grown)  // the pool is empty now: a new one, as large

	huge := make([]byte, 2<<20)
	bufs.Put(&huge)
	is.True(cap(*bufs.Get(0)) < 2<<20) // not kept
}

// A Lent message is sent as it is and its buffer goes back once gRPC frees
// it.
func TestCodecSendsLentBuffers(t *testing.T) {
	is := is.New(t)
	var bufs Buffers
	b := bufs.Get(0)
	*b = append((*b)[:0], make([]byte, 4<<10)...)
	(*b)[0] = 42
	data, err := NewCodec().Marshal(Lent{Buf: b, From: &bufs})
	is.NoErr(err)
	is.Equal(data.Materialize(), *b)
	is.Equal(bufs.last.Load(), int64(0))
	data.Free()
	is.Equal(bufs.last.Load(), int64(cap(*b))) // taken back
}

// gRPC pools no buffer of 1 KiB or less: a small Lent message goes out as a
// copy and its buffer comes back at once, so that a stream of small
// messages does not make a new buffer for each.
func TestCodecTakesSmallBuffersBackAtOnce(t *testing.T) {
	is := is.New(t)
	var bufs Buffers
	b := bufs.Get(0)
	*b = append((*b)[:0], "a small message"...)
	data, err := NewCodec().Marshal(Lent{Buf: b, From: &bufs})
	is.NoErr(err)
	is.Equal(bufs.last.Load(), int64(cap(*b))) // taken back before gRPC is done
	*b = append((*b)[:0], "overwritten by the next"...)
	is.Equal(string(data.Materialize()), "a small message") // what was sent is a copy
	data.Free()
}
