package plugin

import (
	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/conduitio/conduit-connector-protocol/pconnector"
	connectorv2 "github.com/conduitio/conduit-connector-protocol/proto/connector/v2"
	"github.com/connkit/connkit/internal/wire"
)

// runRequest is a destination's Run request, decoded into records.
type runRequest struct {
	dec     *wire.RecordDecoder
	records []opencdc.Record
}

func (r *runRequest) UnmarshalWire(b []byte) error {
	var err error
	r.records, err = r.dec.RunRequest(b, r.records[:0])
	return err
}

// destinationService is the protocol's destination service with its own
// Run, whose stream decodes records with a RecordDecoder.
type destinationService struct {
	connectorv2.DestinationPluginServer
	impl       pconnector.DestinationPlugin
	maxMessage int
}

func (s destinationService) Run(stream connectorv2.DestinationPlugin_RunServer) error {
	return s.impl.Run(stream.Context(), &destinationRunStream{stream: stream, dec: &wire.RecordDecoder{}, maxMessage: s.maxMessage})
}

// destinationRunStream is the server side of a destination's Run stream.
type destinationRunStream struct {
	stream     connectorv2.DestinationPlugin_RunServer
	dec        *wire.RecordDecoder
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
	for _, part := range wire.SplitAcks(acks, s.maxMessage) {
		if err := s.stream.Send(&connectorv2.Destination_Run_Response{Acks: part}); err != nil {
			return err
		}
	}
	return nil
}
