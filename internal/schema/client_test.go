package schema

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/conduitio/conduit-connector-protocol/pconnutils"
	"github.com/conduitio/conduit-connector-protocol/pconnutils/v1/server"
	connutilsv1 "github.com/conduitio/conduit-connector-protocol/proto/connutils/v1"
	"github.com/connkit/connkit/internal/leakcheck"
	"github.com/matryer/is"
	"google.golang.org/grpc"
)

// service is an in-memory schema service as Conduit serves it: it returns
// the bare sentinels and records the tokens it sees.
type service struct {
	r      Registry
	mu     sync.Mutex
	tokens []string
	calls  int
}

func (s *service) saw(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	s.tokens = append(s.tokens, pconnutils.ConnectorTokenFromContext(ctx))
}

func (s *service) CreateSchema(ctx context.Context, req pconnutils.CreateSchemaRequest) (pconnutils.CreateSchemaResponse, error) {
	s.saw(ctx)
	sch, err := s.r.Create(ctx, req.Subject, req.Type, req.Bytes)
	if err != nil {
		return pconnutils.CreateSchemaResponse{}, bare(err)
	}
	return pconnutils.CreateSchemaResponse{Schema: sch}, nil
}

func (s *service) GetSchema(ctx context.Context, req pconnutils.GetSchemaRequest) (pconnutils.GetSchemaResponse, error) {
	s.saw(ctx)
	sch, err := s.r.Get(ctx, req.Subject, req.Version)
	if err != nil {
		return pconnutils.GetSchemaResponse{}, bare(err)
	}
	return pconnutils.GetSchemaResponse{Schema: sch}, nil
}

// bare returns the sentinel under err, as Conduit's service does.
func bare(err error) error {
	if s := knownError(err); s != nil {
		return s
	}
	return err
}

func (s *service) seen() (calls int, tokens []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls, append([]string(nil), s.tokens...)
}

// serve starts the protocol's own schema service server for impl on a
// loopback port and returns its address.
func serve(t *testing.T, impl pconnutils.SchemaService) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	connutilsv1.RegisterSchemaServiceServer(srv, server.NewSchemaServiceServer(impl))
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(lis)
	}()
	t.Cleanup(func() {
		srv.Stop()
		<-done
	})
	return lis.Addr().String()
}

func TestClient(t *testing.T) {
	leakcheck.Check(t)
	is := is.New(t)
	ctx := context.Background()
	svc := &service{r: NewInMemory()}
	c, err := Dial(serve(t, svc), "secret-token")
	is.NoErr(err)
	defer c.Close()

	s, err := c.Create(ctx, "s", TypeAvro, []byte(textA))
	is.NoErr(err)
	is.Equal(s.Subject, "s")
	is.Equal(s.Version, 1)
	is.Equal(s.Type, TypeAvro)
	is.Equal(string(s.Bytes), textA)

	got, err := c.Get(ctx, "s", 1)
	is.NoErr(err)
	is.Equal(got, s)

	t.Run("missing subject", func(t *testing.T) {
		is := is.New(t)
		_, err := c.Get(ctx, "nope", 1)
		is.True(errors.Is(err, ErrSubjectNotFound))
		is.Equal(err.Error(), `schema subject "nope" version 1: schema subject not found`)
	})
	t.Run("missing version", func(t *testing.T) {
		is := is.New(t)
		_, err := c.Get(ctx, "s", 3)
		is.True(errors.Is(err, ErrVersionNotFound))
		is.Equal(err.Error(), `schema subject "s" version 3: schema version not found`)
	})
	t.Run("invalid schema", func(t *testing.T) {
		is := is.New(t)
		_, err := c.Create(ctx, "s", TypeAvro, []byte(`{"type":`))
		is.True(errors.Is(err, ErrInvalidSchema))
		is.True(strings.HasPrefix(err.Error(), `create schema subject "s": `))
	})

	_, tokens := svc.seen()
	is.True(len(tokens) > 0)
	for _, tok := range tokens {
		is.Equal(tok, "secret-token")
	}
}

// A server that wraps the sentinels still yields them.
func TestClientWrappedServerErrors(t *testing.T) {
	leakcheck.Check(t)
	is := is.New(t)
	svc := &wrapping{service{r: NewInMemory()}}
	c, err := Dial(serve(t, svc), "")
	is.NoErr(err)
	defer c.Close()
	_, err = c.Get(context.Background(), "s", 4)
	is.True(errors.Is(err, ErrSubjectNotFound))
	is.True(strings.Contains(err.Error(), `subject "s" version 4`))
	_, tokens := svc.seen()
	is.Equal(tokens, []string{""})
}

type wrapping struct{ service }

func (w *wrapping) GetSchema(ctx context.Context, req pconnutils.GetSchemaRequest) (pconnutils.GetSchemaResponse, error) {
	w.saw(ctx)
	_, err := w.r.Get(ctx, req.Subject, req.Version)
	return pconnutils.GetSchemaResponse{}, err
}

func TestCachedClient(t *testing.T) {
	leakcheck.Check(t)
	is := is.New(t)
	ctx := context.Background()
	svc := &service{r: NewInMemory()}
	target := serve(t, svc)
	r, closer, err := FromEnv(func(k string) string {
		switch k {
		case pconnutils.EnvConduitConnectorUtilitiesGRPCTarget:
			return target
		case pconnutils.EnvConduitConnectorToken:
			return "env-token"
		}
		return ""
	})
	is.NoErr(err)
	defer closer.Close()

	for range 3 {
		s, err := r.Create(ctx, "s", TypeAvro, []byte(textA))
		is.NoErr(err)
		_, err = r.Get(ctx, "s", s.Version)
		is.NoErr(err)
	}
	calls, _ := svc.seen()
	is.Equal(calls, 1) // one Create; the Gets were answered from it

	for range 3 {
		_, err := r.Get(ctx, "s", 2)
		is.True(errors.Is(err, ErrVersionNotFound))
	}
	calls, tokens := svc.seen()
	is.Equal(calls, 4) // failures are not kept
	is.Equal(tokens[0], "env-token")

	codecs := NewCodecs(r)
	for range 3 {
		c, err := codecs.Get(ctx, "s", 1)
		is.NoErr(err)
		is.Equal(c.Schema().Version, 1)
	}
	calls, _ = svc.seen()
	is.Equal(calls, 4)
}
