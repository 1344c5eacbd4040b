package plugin

import (
	"context"
	"errors"
	"fmt"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/conduitio/conduit-connector-protocol/pconnector"
	serverv2 "github.com/conduitio/conduit-connector-protocol/pconnector/v2/server"
	connectorv2 "github.com/conduitio/conduit-connector-protocol/proto/connector/v2"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/proto" // registers the codec wireCodec defers to
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
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
	maxMessage     int
}

func (p destinationV2) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	registerDestinationV2(s, p.newDestination(), p.maxMessage)
	return nil
}

// registerDestinationV2 registers impl on s; no message it sends is larger
// than maxMessage bytes.
func registerDestinationV2(s grpc.ServiceRegistrar, impl pconnector.DestinationPlugin, maxMessage int) {
	connectorv2.RegisterDestinationPluginServer(s, destinationServiceV2{serverv2.NewDestinationPluginServer(impl), impl, maxMessage})
}

func (destinationV2) GRPCClient(context.Context, *goplugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, errors.New("plugin: a plugin serves, it has no client")
}

type destinationServiceV2 struct {
	connectorv2.DestinationPluginServer
	impl       pconnector.DestinationPlugin
	maxMessage int
}

func (s destinationServiceV2) Run(stream connectorv2.DestinationPlugin_RunServer) error {
	return s.impl.Run(stream.Context(), &destinationRunStream{stream: stream, dec: &recordDecoder{}, maxMessage: s.maxMessage})
}

// destinationRunStream is the server side of a destination's Run stream.
type destinationRunStream struct {
	stream     connectorv2.DestinationPlugin_RunServer
	dec        *recordDecoder
	maxMessage int
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

// Send sends the acks in as many messages as it takes for none to be
// larger than Conduit accepts.
func (s *destinationRunStream) Send(resp pconnector.DestinationRunResponse) error {
	acks := make([]*connectorv2.Destination_Run_Response_Ack, len(resp.Acks))
	for i, a := range resp.Acks {
		acks[i] = &connectorv2.Destination_Run_Response_Ack{Position: a.Position, Error: a.Error}
	}
	for _, part := range splitAcks(acks, s.maxMessage) {
		if err := s.stream.Send(&connectorv2.Destination_Run_Response{Acks: part}); err != nil {
			return err
		}
	}
	return nil
}

// splitAcks splits acks into runs whose Run response is at most max bytes
// on the wire (an ack larger than that alone goes alone); max <= 0 means
// no limit.
func splitAcks(acks []*connectorv2.Destination_Run_Response_Ack, max int) [][]*connectorv2.Destination_Run_Response_Ack {
	if max <= 0 {
		return [][]*connectorv2.Destination_Run_Response_Ack{acks}
	}
	var parts [][]*connectorv2.Destination_Run_Response_Ack
	start, size := 0, 0
	for i, a := range acks {
		n := proto.Size(a)
		n += protowire.SizeTag(1) + protowire.SizeBytes(n) - n // the field's tag and length
		if i > start && size+n > max {
			parts = append(parts, acks[start:i])
			start, size = i, 0
		}
		size += n
	}
	return append(parts, acks[start:])
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
	newSource  func() pconnector.SourcePlugin
	maxMessage int
}

func (p sourceV2) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	registerSourceV2(s, p.newSource(), p.maxMessage)
	return nil
}

// registerSourceV2 registers impl on s; no message it sends is larger than
// maxMessage bytes, except one carrying a single record larger than that.
func registerSourceV2(s grpc.ServiceRegistrar, impl pconnector.SourcePlugin, maxMessage int) {
	connectorv2.RegisterSourcePluginServer(s, sourceServiceV2{serverv2.NewSourcePluginServer(impl), impl, maxMessage})
}

func (sourceV2) GRPCClient(context.Context, *goplugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, errors.New("plugin: a plugin serves, it has no client")
}

type sourceServiceV2 struct {
	connectorv2.SourcePluginServer
	impl       pconnector.SourcePlugin
	maxMessage int
}

func (s sourceServiceV2) Run(stream connectorv2.SourcePlugin_RunServer) error {
	return s.impl.Run(stream.Context(), &sourceRunStream{stream: stream, maxMessage: s.maxMessage})
}

// sourceRunStream is the server side of a source's Run stream.
type sourceRunStream struct {
	stream     connectorv2.SourcePlugin_RunServer
	maxMessage int
}

func (s *sourceRunStream) Client() pconnector.SourceRunStreamClient {
	panic("plugin: a source's Run stream is served, it has no client side")
}

func (s *sourceRunStream) Server() pconnector.SourceRunStreamServer { return s }

// Send sends the records in as many messages as it takes for none to be
// larger than Conduit accepts; a record larger than that travels alone.
func (s *sourceRunStream) Send(resp pconnector.SourceRunResponse) error {
	if s.maxMessage <= 0 {
		return s.stream.SendMsg(sourceRunResponse{resp.Records})
	}
	return splitSourceRunResponse(resp.Records, s.maxMessage, func(msg []byte) error {
		return s.stream.SendMsg(encodedMessage(msg))
	})
}

// encodedMessage is a message already in its wire form.
type encodedMessage []byte

func (m encodedMessage) marshalWire() ([]byte, error) { return m, nil }

// splitSourceRunResponse encodes records as Run responses of at most limit
// bytes each, in order, and passes each to send, which owns it.
func splitSourceRunResponse(records []opencdc.Record, limit int, send func([]byte) error) error {
	b := make([]byte, 0, min(limit, 256*len(records)))
	for i := range records {
		start := len(b) // where record i's field begins
		var content int
		var err error
		b, content = openMessage(b, sourceRunResponseRecords)
		if b, err = appendRecord(b, records[i]); err != nil {
			return fmt.Errorf("record %d at position %q: %w", i, records[i].Position, err)
		}
		b = closeMessage(b, content)
		if len(b) > limit && start > 0 {
			rest := b[start:]
			if err := send(b[:start:start]); err != nil {
				return err
			}
			b = append(make([]byte, 0, max(len(rest), min(limit, 256*(len(records)-i)))), rest...)
		}
	}
	if len(b) == 0 {
		return nil
	}
	return send(b)
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
