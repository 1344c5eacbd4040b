package host

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/conduitio/conduit-connector-protocol/pconnutils"
	"github.com/conduitio/conduit-connector-protocol/pconnutils/v1/server"
	connutilsv1 "github.com/conduitio/conduit-connector-protocol/proto/connutils/v1"
	"github.com/connkit/connkit/internal/schema"
	"google.golang.org/grpc"
)

// SchemaService serves Conduit's schema service, part of its connector
// utilities, to plugins on a loopback address, from a registry. Plugins
// that share one see each other's schemas, as in Conduit.
type SchemaService struct {
	// Registry holds the schemas plugins create.
	Registry schema.Registry
	server   *grpc.Server
	lis      net.Listener
	served   chan struct{}
}

// StartSchemaService starts a schema service on 127.0.0.1 with an empty
// in-memory registry.
func StartSchemaService() (*SchemaService, error) {
	return ServeSchemas(schema.NewInMemory())
}

// ServeSchemas starts a schema service on 127.0.0.1 that serves reg: every
// call a plugin makes reaches reg once, with the connector token the plugin
// presented in its context (pconnutils.ConnectorTokenFromContext). Tests
// wrap a registry to count calls or check tokens.
func ServeSchemas(reg schema.Registry) (*SchemaService, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("schema service: %w", err)
	}
	s := &SchemaService{Registry: reg, server: grpc.NewServer(), lis: lis, served: make(chan struct{})}
	connutilsv1.RegisterSchemaServiceServer(s.server, server.NewSchemaServiceServer(schemaService{s.Registry}))
	go func() { defer close(s.served); _ = s.server.Serve(lis) }()
	return s, nil
}

// Target is the address plugins reach the service at.
func (s *SchemaService) Target() string { return s.lis.Addr().String() }

// Stop ends the service and waits until it has ended.
func (s *SchemaService) Stop() {
	s.server.Stop()
	<-s.served
}

// schemaService serves a registry with the protocol's types.
type schemaService struct{ reg schema.Registry }

func (s schemaService) CreateSchema(ctx context.Context, req pconnutils.CreateSchemaRequest) (pconnutils.CreateSchemaResponse, error) {
	sch, err := s.reg.Create(ctx, req.Subject, req.Type, req.Bytes)
	return pconnutils.CreateSchemaResponse{Schema: sch}, bare(err)
}

func (s schemaService) GetSchema(ctx context.Context, req pconnutils.GetSchemaRequest) (pconnutils.GetSchemaResponse, error) {
	sch, err := s.reg.Get(ctx, req.Subject, req.Version)
	return pconnutils.GetSchemaResponse{Schema: sch}, bare(err)
}

// bare returns the sentinel err wraps, alone, as Conduit's service does
// (its connutils.SchemaService unwraps the registry's errors): the client
// names the subject and version itself, and a wrapped message would say
// them twice.
func bare(err error) error {
	for _, s := range []error{schema.ErrSubjectNotFound, schema.ErrVersionNotFound, schema.ErrInvalidSchema} {
		if errors.Is(err, s) {
			return s
		}
	}
	return err
}
