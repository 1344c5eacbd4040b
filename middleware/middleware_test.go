package middleware

import (
	"context"
	"testing"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/connkit/connkit/batcher"
	"github.com/matryer/is"
)

type tagged struct {
	Destination
	tag string
}

func (t tagged) Unwrap() Destination { return t.Destination }

func tag(name string) Middleware[Destination] {
	return func(d Destination) Destination { return tagged{d, name} }
}

type base struct{}

func (base) Open(context.Context) error                               { return nil }
func (base) Write(_ context.Context, r []opencdc.Record) (int, error) { return len(r), nil }
func (base) Teardown(context.Context) error                           { return nil }
func (base) OnCreated(context.Context) error                          { return nil }

func TestChainFirstIsOutermost(t *testing.T) {
	is := is.New(t)
	d := Chain(tag("outer"), nil, tag("middle"), tag("inner"))(base{})
	var order []string
	for c := d; ; {
		tg, ok := c.(tagged)
		if !ok {
			break
		}
		order = append(order, tg.tag)
		c = tg.Destination
	}
	is.Equal(order, []string{"outer", "middle", "inner"})
}

func TestFindLooksThroughWrappers(t *testing.T) {
	is := is.New(t)
	d := Chain(tag("a"), BatchDestination(batcher.Policy{Count: 3}), tag("b"))(base{})
	_, ok := Find[interface{ OnCreated(context.Context) error }](d)
	is.True(ok) // the connector's hook, three layers down
	p, ok := PolicyOf(d)
	is.True(ok)
	is.Equal(p.Count, 3)
	_, ok = PolicyOf(base{})
	is.True(!ok)
}

func TestBatchingWithNothingToDo(t *testing.T) {
	is := is.New(t)
	is.Equal(BatchDestination(batcher.Policy{})(base{}), Destination(base{})) // unchanged
	is.Equal(Batching{}.ForDestination()(base{}), Destination(base{}))
}
