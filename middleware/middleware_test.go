package middleware

import (
	"context"
	"testing"

	"github.com/conduitio/conduit-commons/opencdc"
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
	d := Chain(tag("a"), LimitRate(100, 0), tag("b"))(base{})
	_, ok := Find[CreatedHook](d)
	is.True(ok) // the connector's hook, three layers down
	_, ok = Find[DeletedHook](d)
	is.True(!ok)
}

func TestRateLimitWithNothingToDo(t *testing.T) {
	is := is.New(t)
	is.Equal(LimitRate(0, 10)(base{}), Destination(base{})) // unchanged
	mw, err := RateLimit{}.ForDestination(Env{})
	is.NoErr(err)
	is.Equal(mw(base{}), Destination(base{}))
}
