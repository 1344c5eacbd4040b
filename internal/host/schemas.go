package host

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/conduitio/conduit-connector-protocol/pconnutils"
	"github.com/conduitio/conduit-connector-protocol/pconnutils/v1/server"
	connutilsv1 "github.com/conduitio/conduit-connector-protocol/proto/connutils/v1"
	"github.com/connkit/connkit/sdk/schema"
	"google.golang.org/grpc"
)

// SchemaService serves Conduit's schema service, part of its connector
// utilities, to plugins on a loopback address, from an in-memory registry.
// Plugins that share one see each other's schemas, as in Conduit.
type SchemaService struct {
	// Registry holds the schemas plugins create.
	Registry schema.Registry
	server   *grpc.Server
	lis      net.Listener
	served   chan struct{}
}

// StartSchemaService starts a schema service on 127.0.0.1.
func StartSchemaService() (*SchemaService, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("schema service: %w", err)
	}
	s := &SchemaService{Registry: schema.NewInMemory(), server: grpc.NewServer(), lis: lis, served: make(chan struct{})}
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
	return pconnutils.CreateSchemaResponse{Schema: sch}, err
}

// GetSchema answers a missing schema with the bare sentinel, as a service
// that knows nothing of the client's wording; the client names the subject
// and version.
func (s schemaService) GetSchema(ctx context.Context, req pconnutils.GetSchemaRequest) (pconnutils.GetSchemaResponse, error) {
	sch, err := s.reg.Get(ctx, req.Subject, req.Version)
	switch {
	case errors.Is(err, pconnutils.ErrVersionNotFound):
		err = pconnutils.ErrVersionNotFound
	case errors.Is(err, pconnutils.ErrSubjectNotFound):
		err = pconnutils.ErrSubjectNotFound
	}
	return pconnutils.GetSchemaResponse{Schema: sch}, err
}
