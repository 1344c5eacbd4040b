package host

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/conduitio/conduit-commons/opencdc"
	opencdcv1 "github.com/conduitio/conduit-commons/proto/opencdc/v1"
	"github.com/conduitio/conduit-connector-protocol/pconnector"
	connectorv2 "github.com/conduitio/conduit-connector-protocol/proto/connector/v2"
	"github.com/connkit/connkit/internal/wire"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// Stats describe one measured run.
type Stats struct {
	Records  int64
	Bytes    int64 // payload bytes
	Messages int64 // messages that carried the records
	Elapsed  time.Duration
	// Latencies of acks, from sending a record to receiving its ack, sorted;
	// only for destinations.
	Latencies []time.Duration
}

// RecordsPerSecond is Records over Elapsed.
func (s Stats) RecordsPerSecond() float64 { return float64(s.Records) / s.Elapsed.Seconds() }

// MBPerSecond is payload megabytes (10^6 bytes) over Elapsed.
func (s Stats) MBPerSecond() float64 { return float64(s.Bytes) / 1e6 / s.Elapsed.Seconds() }

// Latency returns the q-quantile (0..1) of the ack latencies.
func (s Stats) Latency(q float64) time.Duration { return quantile(s.Latencies, q) }

// quantile returns the q-quantile (0..1) of sorted, zero if it is empty.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

// Drain reads n records from an opened source the way Conduit does: it
// acks each message's records once it has received them, stops the source
// after n records, keeps receiving and acking until the position Stop
// returned, and tears the source down.
func Drain(ctx context.Context, src SourcePlugin, n int64) (Stats, error) {
	return DrainSince(ctx, src, n, time.Time{})
}

// Drain reads from each message only what acking and counting need, the
// positions and the sizes of raw payloads, so that the figures measure the
// source and not the cost of decoding its records.
//
// DrainSince is [Drain] with Elapsed measured from since rather than from
// the first message, for sources that do work before they send anything
// (a database source's snapshot query, say). A zero since is Drain's.
func DrainSince(ctx context.Context, src SourcePlugin, n int64, since time.Time) (Stats, error) {
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := src.runProto(runCtx, grpc.ForceCodecV2(wire.NewCodec()))
	if err != nil {
		return Stats{}, fmt.Errorf("source Run: %w", err)
	}
	var (
		mu      sync.Mutex
		st      Stats
		start   = since
		last    []byte
		changed = make(chan struct{}, 1)
	)
	recvErr := make(chan error, 1)
	go func() {
		for {
			var msg scannedRecords
			if err := stream.RecvMsg(&msg); err != nil {
				recvErr <- err
				return
			}
			if len(msg.positions) == 0 {
				continue
			}
			acks := msg.positions
			mu.Lock()
			if start.IsZero() {
				start = time.Now()
			}
			if st.Elapsed == 0 { // what arrives after n records is acked, not counted
				st.Bytes += int64(msg.rawBytes)
				st.Records += int64(len(acks))
				st.Messages++
				if st.Records >= n {
					st.Elapsed = time.Since(start)
				}
			}
			last = acks[len(acks)-1]
			mu.Unlock()
			select {
			case changed <- struct{}{}:
			default:
			}
			if err := stream.Send(&connectorv2.Source_Run_Request{AckPositions: acks}); err != nil {
				recvErr <- fmt.Errorf("send acks: %w", err)
				return
			}
		}
	}()
	// until returns once cond holds, checked whenever a message arrived.
	until := func(cond func() bool) error {
		for {
			mu.Lock()
			ok := cond()
			mu.Unlock()
			if ok {
				return nil
			}
			select {
			case <-changed:
			case err := <-recvErr:
				return fmt.Errorf("receive after %d records: %w", st.Records, err)
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	if err := until(func() bool { return st.Records >= n }); err != nil {
		return st, err
	}
	// Stop while still receiving: a source may be sending when Stop comes.
	resp, err := src.Stop(ctx, pconnector.SourceStopRequest{})
	if err != nil {
		return st, fmt.Errorf("source Stop: %w", err)
	}
	if len(resp.LastPosition) > 0 {
		if err := until(func() bool { return bytes.Equal(last, resp.LastPosition) }); err != nil {
			return st, err
		}
	}
	cancel()
	_, err = src.Teardown(context.WithoutCancel(ctx), pconnector.SourceTeardownRequest{})
	mu.Lock()
	defer mu.Unlock()
	return st, err
}

// Feed sends n records, made by record, to an opened destination in
// messages of perMessage records, without waiting for acks (as Conduit
// does), checks that every ack arrives in order and positive, then stops
// and tears the destination down. Positions are "1", "2", ...
//
// Every message is encoded before the clock starts, so that the figures
// measure the destination and not the cost of making its input.
func Feed(ctx context.Context, dst DestinationPlugin, n int64, perMessage int, record func(i int64) opencdc.Record) (Stats, error) {
	if perMessage < 1 {
		return Stats{}, errors.New("host: perMessage must be at least 1")
	}
	var st Stats
	msgs := make([]encoded, 0, (n+int64(perMessage)-1)/int64(perMessage))
	for first := int64(1); first <= n; first += int64(perMessage) {
		req := &connectorv2.Destination_Run_Request{}
		for i := first; i < first+int64(perMessage) && i <= n; i++ {
			r := record(i)
			r.Position = opencdc.Position(strconv.FormatInt(i, 10))
			p := &opencdcv1.Record{}
			if err := r.ToProto(p); err != nil {
				return Stats{}, fmt.Errorf("record %d: %w", i, err)
			}
			req.Records = append(req.Records, p)
			if r.Payload.After != nil {
				st.Bytes += int64(len(r.Payload.After.Bytes()))
			}
		}
		b, err := proto.Marshal(req)
		if err != nil {
			return Stats{}, fmt.Errorf("encode message %d: %w", len(msgs)+1, err)
		}
		msgs = append(msgs, encoded{b, len(req.Records)})
	}

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := dst.runProto(runCtx, grpc.ForceCodecV2(wire.NewCodec()))
	if err != nil {
		return Stats{}, fmt.Errorf("destination Run: %w", err)
	}
	var (
		mu   sync.Mutex
		sent = make([]time.Time, 0, n)
	)
	sendErr := make(chan error, 1)
	start := time.Now()
	go func() {
		sendErr <- func() error {
			for _, m := range msgs {
				now := time.Now()
				mu.Lock()
				for range m.records {
					sent = append(sent, now)
				}
				mu.Unlock()
				if err := stream.SendMsg(m.msg); err != nil {
					return fmt.Errorf("send: %w", err)
				}
			}
			return nil
		}()
	}()
	st.Messages = int64(len(msgs))

	latencies := make([]time.Duration, 0, n)
	for next := int64(1); next <= n; {
		resp, err := stream.Recv()
		if err != nil {
			return st, errors.Join(fmt.Errorf("receive acks after %d: %w", next-1, err), <-sendErr)
		}
		now := time.Now()
		for _, a := range resp.GetAcks() {
			if want := strconv.FormatInt(next, 10); string(a.GetPosition()) != want {
				return st, fmt.Errorf("ack for position %q, expected %q", a.GetPosition(), want)
			}
			if a.GetError() != "" {
				return st, fmt.Errorf("record %d nacked: %s", next, a.GetError())
			}
			mu.Lock()
			latencies = append(latencies, now.Sub(sent[next-1]))
			mu.Unlock()
			next++
		}
	}
	st.Elapsed = time.Since(start)
	st.Records = n
	if err := <-sendErr; err != nil {
		return st, err
	}
	slices.Sort(latencies)
	st.Latencies = latencies
	if _, err := dst.Stop(ctx, pconnector.DestinationStopRequest{LastPosition: opencdc.Position(fmt.Sprint(n))}); err != nil {
		return st, &StopError{err}
	}
	cancel()
	_, err = dst.Teardown(context.WithoutCancel(ctx), pconnector.DestinationTeardownRequest{})
	return st, err
}

// StopError is a destination's Stop failing after every record was acked:
// the figures measured stand, the plugin is at fault.
type StopError struct{ Err error }

func (e *StopError) Error() string {
	return "destination Stop failed after every record was acked: " + e.Err.Error()
}
func (e *StopError) Unwrap() error { return e.Err }

// encoded is a message in its wire form and the number of records in it.
type encoded struct {
	msg     wire.Encoded
	records int
}

// scannedRecords is what a host needs of a source's Run response: the
// records' positions and the bytes of their raw payloads, and with keep,
// each record's field in wire form.
type scannedRecords struct {
	keep      bool
	positions [][]byte
	readAt    []int64 // each record's opencdc.readAt, Unix nanoseconds; 0 if it has none
	rawBytes  int
	// records are the message's record fields, each also a destination's
	// Run request of that one record: both messages hold their records in
	// field 1.
	records [][]byte
}

// UnmarshalWire reads b, a connector.v2.Source.Run.Response, whose records
// are field 1. With keep, it copies the records' fields out of b, which is
// only lent.
func (m *scannedRecords) UnmarshalWire(b []byte) error {
	var kept []byte
	if m.keep {
		kept = make([]byte, 0, len(b))
	}
	return wire.Fields(b, func(f wire.Field) error {
		if f.Num != 1 || f.Type != protowire.BytesType {
			return nil
		}
		record := f.Bytes
		if m.keep {
			start := len(kept)
			kept = protowire.AppendBytes(protowire.AppendTag(kept, 1, protowire.BytesType), record)
			m.records = append(m.records, kept[start:len(kept):len(kept)])
			record = kept[len(kept)-len(record):]
		}
		return m.record(record)
	})
}

// record reads an opencdc.v1.Record's position, field 1, and the bytes of
// its raw payload: the payload is field 5; in it, after is field 2; in
// data, raw bytes are field 1.
func (m *scannedRecords) record(b []byte) error {
	var (
		position []byte
		readAt   int64
	)
	err := wire.Fields(b, func(f wire.Field) error {
		if f.Type != protowire.BytesType {
			return nil
		}
		switch f.Num {
		case 1:
			position = f.Bytes
			if !m.keep {
				position = bytes.Clone(f.Bytes)
			}
		case 3: // a metadata entry: key 1, value 2
			var key, value []byte
			err := wire.Fields(f.Bytes, func(f wire.Field) error {
				switch {
				case f.Num == 1 && f.Type == protowire.BytesType:
					key = f.Bytes
				case f.Num == 2 && f.Type == protowire.BytesType:
					value = f.Bytes
				}
				return nil
			})
			if err == nil && string(key) == opencdc.MetadataReadAt {
				readAt, _ = strconv.ParseInt(string(value), 10, 64)
			}
			return err
		case 5:
			return wire.Fields(f.Bytes, func(f wire.Field) error {
				if f.Num != 2 || f.Type != protowire.BytesType {
					return nil
				}
				return wire.Fields(f.Bytes, func(f wire.Field) error {
					if f.Num == 1 && f.Type == protowire.BytesType {
						m.rawBytes += len(f.Bytes)
					}
					return nil
				})
			})
		}
		return nil
	})
	m.positions = append(m.positions, position)
	m.readAt = append(m.readAt, readAt)
	return err
}
