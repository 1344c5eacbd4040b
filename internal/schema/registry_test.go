package schema

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/connkit/connkit/internal/leakcheck"
	"github.com/matryer/is"
)

const textA = `{"type":"record","name":"a","fields":[{"name":"id","type":"long"}]}`
const textB = `{"type":"record","name":"b","fields":[{"name":"id","type":"string"}]}`

func TestInMemory(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	r := NewInMemory()

	a1, err := r.Create(ctx, "s", TypeAvro, []byte(textA))
	is.NoErr(err)
	is.Equal(a1.Version, 1)
	is.Equal(a1.Subject, "s")
	is.Equal(string(a1.Bytes), textA)

	again, err := r.Create(ctx, "s", TypeAvro, []byte(textA))
	is.NoErr(err)
	is.Equal(again, a1) // identical text: the existing version

	b2, err := r.Create(ctx, "s", TypeAvro, []byte(textB))
	is.NoErr(err)
	is.Equal(b2.Version, 2)
	is.True(b2.ID != a1.ID)

	other, err := r.Create(ctx, "t", TypeAvro, []byte(textA))
	is.NoErr(err)
	is.Equal(other.Version, 1)
	is.Equal(other.ID, a1.ID) // same text, same ID across subjects

	got, err := r.Get(ctx, "s", 2)
	is.NoErr(err)
	is.Equal(got, b2)

	_, err = r.Get(ctx, "nope", 1)
	is.True(errors.Is(err, ErrSubjectNotFound))
	is.True(IsNotFound(err))
	is.True(strings.Contains(err.Error(), `"nope"`))
	for _, v := range []int{0, -1, 3} {
		_, err = r.Get(ctx, "s", v)
		is.True(errors.Is(err, ErrVersionNotFound))
		is.True(strings.Contains(err.Error(), fmt.Sprintf(`subject "s" version %d`, v)))
	}

	_, err = r.Create(ctx, "s", TypeAvro, []byte(`{"type":`))
	is.True(errors.Is(err, ErrInvalidSchema))
	_, err = r.Create(ctx, "s", 9, []byte(textA))
	is.True(errors.Is(err, ErrInvalidSchema))
}

func TestInMemoryKeepsNoCallerMemory(t *testing.T) {
	is := is.New(t)
	text := []byte(textA)
	r := NewInMemory()
	s, err := r.Create(context.Background(), "s", TypeAvro, text)
	is.NoErr(err)
	text[0] = 'X'
	is.Equal(string(s.Bytes), textA)
}

// counting is a fake registry that counts calls, can fail on demand and can
// hold calls until released.
type counting struct {
	Registry
	mu      sync.Mutex
	creates int
	gets    int
	fail    error
	gate    chan struct{} // when set, calls wait for it to close
	entered chan struct{} // when set, receives once per call entered
}

func newCounting() *counting { return &counting{Registry: NewInMemory()} }

func (c *counting) enter() error {
	c.mu.Lock()
	gate, entered, fail := c.gate, c.entered, c.fail
	c.mu.Unlock()
	if entered != nil {
		entered <- struct{}{}
	}
	if gate != nil {
		<-gate
	}
	return fail
}

func (c *counting) Create(ctx context.Context, subject string, typ Type, text []byte) (Schema, error) {
	c.mu.Lock()
	c.creates++
	c.mu.Unlock()
	if err := c.enter(); err != nil {
		return Schema{}, err
	}
	return c.Registry.Create(ctx, subject, typ, text)
}

func (c *counting) Get(ctx context.Context, subject string, version int) (Schema, error) {
	c.mu.Lock()
	c.gets++
	c.mu.Unlock()
	if err := c.enter(); err != nil {
		return Schema{}, err
	}
	return c.Registry.Get(ctx, subject, version)
}

func (c *counting) counts() (creates, gets int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.creates, c.gets
}

func TestCached(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	back := newCounting()
	r := Cached(back)
	is.Equal(Cached(r), r)

	s, err := r.Create(ctx, "s", TypeAvro, []byte(textA))
	is.NoErr(err)
	for range 3 {
		again, err := r.Create(ctx, "s", TypeAvro, []byte(textA))
		is.NoErr(err)
		is.Equal(again, s)
		got, err := r.Get(ctx, "s", s.Version) // answered by the Create
		is.NoErr(err)
		is.Equal(got, s)
	}
	creates, gets := back.counts()
	is.Equal(creates, 1)
	is.Equal(gets, 0)

	// a failure is not kept
	back.fail = errors.New("boom")
	_, err = r.Get(ctx, "s", 2)
	is.True(err != nil)
	back.fail = nil
	_, err = r.Get(ctx, "s", 2)
	is.True(errors.Is(err, ErrVersionNotFound))
	_, err = r.Create(ctx, "s", TypeAvro, []byte(textB))
	is.NoErr(err)
	_, err = r.Get(ctx, "s", 2)
	is.NoErr(err)
	creates, gets = back.counts()
	is.Equal(creates, 2)
	is.Equal(gets, 2)
}

func TestCachedSharesConcurrentMisses(t *testing.T) {
	leakcheck.Check(t)
	is := is.New(t)
	ctx := context.Background()
	back := newCounting()
	want, err := back.Registry.Create(ctx, "s", TypeAvro, []byte(textA))
	is.NoErr(err)
	back.gate = make(chan struct{})
	back.entered = make(chan struct{}, 1)
	r := Cached(back)

	const n = 8
	results := make(chan error, n)
	go func() {
		_, err := r.Get(ctx, "s", 1)
		results <- err
	}()
	<-back.entered // the first caller is inside the backend
	started := make(chan struct{})
	var wg sync.WaitGroup
	for range n - 1 {
		wg.Add(1)
		go func() {
			wg.Done()
			s, err := r.Get(ctx, "s", 1)
			if err == nil && s.ID != want.ID {
				err = fmt.Errorf("got %v", s)
			}
			results <- err
		}()
	}
	go func() { wg.Wait(); close(started) }()
	<-started
	close(back.gate)
	for range n {
		is.NoErr(<-results)
	}
	// Callers that arrived after the first finished find the kept value;
	// either way the backend saw one call.
	_, gets := back.counts()
	is.Equal(gets, 1)
}

func TestCachedWaiterHonoursContext(t *testing.T) {
	leakcheck.Check(t)
	is := is.New(t)
	back := newCounting()
	back.gate = make(chan struct{})
	back.entered = make(chan struct{}, 1)
	r := Cached(back)
	done := make(chan error, 1)
	go func() {
		_, err := r.Get(context.Background(), "s", 1)
		done <- err
	}()
	<-back.entered
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := r.Get(ctx, "s", 1)
	is.True(errors.Is(err, context.Canceled))
	close(back.gate)
	is.True(errors.Is(<-done, ErrSubjectNotFound))
}

func TestFromContext(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	def := FromContext(ctx)
	is.True(def != nil)
	is.Equal(FromContext(ctx), def)
	c := NewCodecs(NewInMemory())
	is.Equal(FromContext(NewContext(ctx, c)), c)
	is.Equal(FromContext(NewContext(ctx, nil)), def)
}

func TestFromEnvWithoutTarget(t *testing.T) {
	is := is.New(t)
	r, closer, err := FromEnv(func(string) string { return "" })
	is.NoErr(err)
	is.NoErr(closer.Close())
	s, err := r.Create(context.Background(), "s", TypeAvro, []byte(textA))
	is.NoErr(err)
	is.Equal(s.Version, 1)
}
