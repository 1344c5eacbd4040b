package plugin

import (
	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/conduitio/conduit-connector-protocol/pconnector"
	connectorv2 "github.com/conduitio/conduit-connector-protocol/proto/connector/v2"
	"github.com/connkit/connkit/internal/wire"
)

// sourceService is the protocol's source service with its own Run, whose
// stream encodes records itself and splits them to fit the limit.
type sourceService struct {
	connectorv2.SourcePluginServer
	impl       pconnector.SourcePlugin
	maxMessage int
}

func (s sourceService) Run(stream connectorv2.SourcePlugin_RunServer) error {
	return s.impl.Run(stream.Context(), &sourceRunStream{
		stream:     stream,
		maxMessage: s.maxMessage,
		// A message is at most one record longer than the limit; what an
		// outsized record needs is not kept.
		buffers: wire.Buffers{MaxKept: 2 * s.maxMessage},
	})
}

// sourceRunStream is the server side of a source's Run stream.
type sourceRunStream struct {
	stream     connectorv2.SourcePlugin_RunServer
	maxMessage int
	buffers    wire.Buffers // what messages are encoded into, reused once written
}

func (s *sourceRunStream) Client() pconnector.SourceRunStreamClient {
	panic("plugin: a source's Run stream is served, it has no client side")
}

func (s *sourceRunStream) Server() pconnector.SourceRunStreamServer { return s }

// Send sends the records in as many messages as it takes for none to be
// larger than Conduit accepts; a record larger than that travels alone.
func (s *sourceRunStream) Send(resp pconnector.SourceRunResponse) error {
	return wire.SplitSourceRunResponse(resp.Records, s.maxMessage, &s.buffers, func(msg *[]byte) error {
		return s.stream.SendMsg(wire.Lent{Buf: msg, From: &s.buffers})
	})
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
