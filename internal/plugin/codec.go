package plugin

import (
	"context"
	"errors"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/conduitio/conduit-connector-protocol/pconnector"
	serverv2 "github.com/conduitio/conduit-connector-protocol/pconnector/v2/server"
	connectorv2 "github.com/conduitio/conduit-connector-protocol/proto/connector/v2"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
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

// runRequest is a destination's Run request, decoded into records.
type runRequest struct {
	dec     *recordDecoder
	records []opencdc.Record
}

func (r *runRequest) unmarshalWire(b []byte) error {
	var err error
	r.records, err = r.dec.runRequest(b, r.records[:0])
	return err
}

// destinationV2 serves protocol version 2's destination service with the
// protocol's own adapter, except for Run, whose records it decodes with a
// recordDecoder.
type destinationV2 struct {
	goplugin.NetRPCUnsupportedPlugin
	newDestination func() pconnector.DestinationPlugin
}

func (p destinationV2) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	registerDestinationV2(s, p.newDestination())
	return nil
}

func registerDestinationV2(s grpc.ServiceRegistrar, impl pconnector.DestinationPlugin) {
	connectorv2.RegisterDestinationPluginServer(s, destinationServiceV2{serverv2.NewDestinationPluginServer(impl), impl})
}

func (destinationV2) GRPCClient(context.Context, *goplugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, errors.New("plugin: a plugin serves, it has no client")
}

type destinationServiceV2 struct {
	connectorv2.DestinationPluginServer
	impl pconnector.DestinationPlugin
}

func (s destinationServiceV2) Run(stream connectorv2.DestinationPlugin_RunServer) error {
	return s.impl.Run(stream.Context(), &destinationRunStream{stream: stream, dec: &recordDecoder{}})
}

// destinationRunStream is the server side of a destination's Run stream.
type destinationRunStream struct {
	stream connectorv2.DestinationPlugin_RunServer
	dec    *recordDecoder
}

func (s *destinationRunStream) Client() pconnector.DestinationRunStreamClient {
	panic("plugin: a destination's Run stream is served, it has no client side")
}

func (s *destinationRunStream) Server() pconnector.DestinationRunStreamServer { return s }

// Recv returns the next request's records. They are the caller's: nothing
// of them is reused.
func (s *destinationRunStream) Recv() (pconnector.DestinationRunRequest, error) {
	req := runRequest{dec: s.dec}
	if err := s.stream.RecvMsg(&req); err != nil {
		return pconnector.DestinationRunRequest{}, err
	}
	return pconnector.DestinationRunRequest{Records: req.records}, nil
}

func (s *destinationRunStream) Send(resp pconnector.DestinationRunResponse) error {
	acks := make([]*connectorv2.Destination_Run_Response_Ack, len(resp.Acks))
	for i, a := range resp.Acks {
		acks[i] = &connectorv2.Destination_Run_Response_Ack{Position: a.Position, Error: a.Error}
	}
	return s.stream.Send(&connectorv2.Destination_Run_Response{Acks: acks})
}

// sourceRunResponse is a source's Run response, encoded from its records.
type sourceRunResponse struct {
	records []opencdc.Record
}

func (r sourceRunResponse) marshalWire() ([]byte, error) {
	return appendSourceRunResponse(make([]byte, 0, 256*len(r.records)), r.records)
}

// sourceV2 serves protocol version 2's source service with the protocol's
// own adapter, except for Run, whose records it encodes itself.
type sourceV2 struct {
	goplugin.NetRPCUnsupportedPlugin
	newSource func() pconnector.SourcePlugin
}

func (p sourceV2) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	registerSourceV2(s, p.newSource())
	return nil
}

func registerSourceV2(s grpc.ServiceRegistrar, impl pconnector.SourcePlugin) {
	connectorv2.RegisterSourcePluginServer(s, sourceServiceV2{serverv2.NewSourcePluginServer(impl), impl})
}

func (sourceV2) GRPCClient(context.Context, *goplugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, errors.New("plugin: a plugin serves, it has no client")
}

type sourceServiceV2 struct {
	connectorv2.SourcePluginServer
	impl pconnector.SourcePlugin
}

func (s sourceServiceV2) Run(stream connectorv2.SourcePlugin_RunServer) error {
	return s.impl.Run(stream.Context(), &sourceRunStream{stream: stream})
}

// sourceRunStream is the server side of a source's Run stream.
type sourceRunStream struct {
	stream connectorv2.SourcePlugin_RunServer
}

func (s *sourceRunStream) Client() pconnector.SourceRunStreamClient {
	panic("plugin: a source's Run stream is served, it has no client side")
}

func (s *sourceRunStream) Server() pconnector.SourceRunStreamServer { return s }

func (s *sourceRunStream) Send(resp pconnector.SourceRunResponse) error {
	return s.stream.SendMsg(sourceRunResponse{resp.Records})
}

func (s *sourceRunStream) Recv() (pconnector.SourceRunRequest, error) {
	req, err := s.stream.Recv()
	if err != nil {
		return pconnector.SourceRunRequest{}, err
	}
	acks := make([]opencdc.Position, len(req.AckPositions))
	for i, p := range req.AckPositions {
		acks[i] = p
	}
	return pconnector.SourceRunRequest{AckPositions: acks}, nil
}
