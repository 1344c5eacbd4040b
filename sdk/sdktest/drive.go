package sdktest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/internal/host"
)

// streamReader is what the readers of both Run streams share: a goroutine
// of its own receives from the stream, as Conduit reads it, until the
// stream ends or close closes it.
type streamReader struct {
	cancel context.CancelFunc
	failed chan error // the stream's end, once
	done   chan struct{}
}

// runStream opens a new Run stream of a client, with its NewStream and
// Run, and reads it in s's goroutine: it calls step with the stream's
// client side and context until step fails, passing on its error as the
// stream's end, or says it is done. It returns the client side.
func runStream[S interface{ Client() C }, C any](ctx context.Context, s *streamReader, newStream func() S, run func(context.Context, S) error, step func(context.Context, C) (done bool, err error)) (C, error) {
	stream := newStream()
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.cancel = cancel
	if err := run(runCtx, stream); err != nil {
		cancel()
		var c C
		return c, err
	}
	s.failed, s.done = make(chan error, 1), make(chan struct{})
	client := stream.Client()
	go func() {
		defer close(s.done)
		for {
			done, err := step(runCtx, client)
			if err != nil {
				s.failed <- err
				return
			}
			if done {
				return
			}
		}
	}()
	return client, nil
}

// close ends the stream, as Conduit does before Teardown.
func (s *streamReader) close() {
	s.cancel()
	<-s.done
}

// sourceRun is a source's Run stream.
type sourceRun struct {
	streamReader
	client host.SourceClient
	stream pconnector.SourceRunStreamClient
	msgs   chan []opencdc.Record

	consumed []opencdc.Record // what next returned, by the check's goroutine only

	mu       sync.Mutex
	received []opencdc.Record
	messages []int // records per message
}

func startSource(ctx context.Context, c host.SourceClient) (*sourceRun, error) {
	r := &sourceRun{client: c, msgs: make(chan []opencdc.Record, 1024)}
	var err error
	r.stream, err = runStream(ctx, &r.streamReader, c.NewStream, c.Run, r.receive)
	return r, err
}

// receive receives a message and hands its records to next.
func (r *sourceRun) receive(ctx context.Context, stream pconnector.SourceRunStreamClient) (done bool, err error) {
	resp, err := stream.Recv()
	if err != nil || len(resp.Records) == 0 {
		return false, err
	}
	r.mu.Lock()
	r.received = append(r.received, resp.Records...)
	r.messages = append(r.messages, len(resp.Records))
	r.mu.Unlock()
	select {
	case r.msgs <- resp.Records:
		return false, nil
	case <-ctx.Done():
		return true, nil
	}
}

// next returns the next message's records.
func (r *sourceRun) next(ctx context.Context) ([]opencdc.Record, error) {
	select {
	case recs := <-r.msgs:
		r.consumed = append(r.consumed, recs...)
		return recs, nil
	case err := <-r.failed:
		r.failed <- err
		return nil, fmt.Errorf("the Run stream ended: %w", err)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// read returns at least n records, acknowledging each message's records
// once ack of them is true.
func (r *sourceRun) read(ctx context.Context, n int, ack func(opencdc.Record) bool) ([]opencdc.Record, error) {
	var out []opencdc.Record
	for len(out) < n {
		recs, err := r.next(ctx)
		if err != nil {
			return out, fmt.Errorf("after %d of %d records: %w", len(out), n, err)
		}
		out = append(out, recs...)
		var acks []opencdc.Position
		for _, rec := range recs {
			if ack != nil && ack(rec) {
				acks = append(acks, rec.Position)
			}
		}
		if len(acks) > 0 {
			if err := r.stream.Send(pconnector.SourceRunRequest{AckPositions: acks}); err != nil {
				return out, fmt.Errorf("send acks: %w", err)
			}
		}
	}
	return out, nil
}

// until reads records, acking them if ack, until the one at pos has
// arrived, and returns every record consumed so far.
func (r *sourceRun) until(ctx context.Context, pos opencdc.Position, ack bool) ([]opencdc.Record, error) {
	for !slices.ContainsFunc(r.consumed, func(rec opencdc.Record) bool { return bytes.Equal(rec.Position, pos) }) {
		recs, err := r.next(ctx)
		if err != nil {
			return r.consumed, err
		}
		if ack {
			acks := make([]opencdc.Position, len(recs))
			for i, rec := range recs {
				acks[i] = rec.Position
			}
			if err := r.stream.Send(pconnector.SourceRunRequest{AckPositions: acks}); err != nil {
				return r.consumed, fmt.Errorf("send acks: %w", err)
			}
		}
	}
	return r.consumed, nil
}

// all returns every record received so far and the sizes of their messages.
func (r *sourceRun) all() ([]opencdc.Record, []int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]opencdc.Record(nil), r.received...), append([]int(nil), r.messages...)
}

// destinationRun is a destination's Run stream.
type destinationRun struct {
	streamReader
	stream pconnector.DestinationRunStreamClient
	acks   chan pconnector.DestinationRunResponseAck
}

func startDestination(ctx context.Context, c host.DestinationClient) (*destinationRun, error) {
	r := &destinationRun{acks: make(chan pconnector.DestinationRunResponseAck, 1<<14)}
	var err error
	r.stream, err = runStream(ctx, &r.streamReader, c.NewStream, c.Run, r.receive)
	return r, err
}

// receive receives a message and hands its acks to wait.
func (r *destinationRun) receive(ctx context.Context, stream pconnector.DestinationRunStreamClient) (done bool, err error) {
	resp, err := stream.Recv()
	if err != nil {
		return false, err
	}
	for _, a := range resp.Acks {
		select {
		case r.acks <- a:
		case <-ctx.Done():
			return true, nil
		}
	}
	return false, nil
}

// send sends records in messages of perMessage records, without waiting
// for acks, as Conduit does.
func (r *destinationRun) send(records []opencdc.Record, perMessage int) error {
	for len(records) > 0 {
		n := min(perMessage, len(records))
		if err := r.stream.Send(pconnector.DestinationRunRequest{Records: records[:n]}); err != nil {
			return fmt.Errorf("send records: %w", err)
		}
		records = records[n:]
	}
	return nil
}

// wait receives the acks of records, checks they come in order, and
// returns how many were positive before the first nack, and that nack.
func (r *destinationRun) wait(ctx context.Context, records []opencdc.Record) (acked int, err error) {
	acc, err := r.account(ctx, records)
	return acc.leading(), err
}

// account receives the acks of records, checks they come in order, and
// returns them, as far as they came, with the first nack, or what ended
// them.
func (r *destinationRun) account(ctx context.Context, records []opencdc.Record) (account, error) {
	var acc account
	var nack error
	for i, rec := range records {
		var a pconnector.DestinationRunResponseAck
		select {
		case a = <-r.acks:
		case err := <-r.failed:
			r.failed <- err
			return acc, errors.Join(nack, fmt.Errorf("the Run stream ended after %d of %d acks: %w", i, len(records), err))
		case <-ctx.Done():
			return acc, errors.Join(nack, fmt.Errorf("waiting for the ack of position %q (%d of %d acked): %w", rec.Position, i, len(records), ctx.Err()))
		}
		if !bytes.Equal(a.Position, rec.Position) {
			return acc, errors.Join(nack, fmt.Errorf("ack for position %q where %q was expected: acks must come in the order records were sent", a.Position, rec.Position))
		}
		if a.Error != "" && nack == nil {
			nack = &host.NackError{Position: a.Position, Message: a.Error}
		}
		acc = append(acc, a.Error)
	}
	return acc, nack
}

// account is what came back for the records sent, in order, as far as
// their acks came: each one's nack's error, empty for a positive ack.
type account []string

// leading returns how many records were acknowledged before the first
// nack.
func (a account) leading() int {
	n := 0
	for n < len(a) && a[n] == "" {
		n++
	}
	return n
}

// acknowledged returns the records of records that were acknowledged.
func (a account) acknowledged(records []opencdc.Record) []opencdc.Record {
	var out []opencdc.Record
	for i, nack := range a {
		if nack == "" {
			out = append(out, records[i])
		}
	}
	return out
}

// String says, in runs, which records (counted from 1) were acknowledged
// and which nacked, with what: "records 1-2 acknowledged; record 3
// nacked: …; records 4-10 nacked: …".
func (a account) String() string {
	var parts []string
	for i := 0; i < len(a); {
		j := i + 1
		for j < len(a) && a[j] == a[i] {
			j++
		}
		what := "record " + strconv.Itoa(i+1)
		if j-i > 1 {
			what = fmt.Sprintf("records %d-%d", i+1, j)
		}
		if a[i] == "" {
			parts = append(parts, what+" acknowledged")
		} else {
			parts = append(parts, fmt.Sprintf("%s nacked: %s", what, a[i]))
		}
		i = j
	}
	if len(parts) == 0 {
		return "no ack came"
	}
	return strings.Join(parts, "; ")
}
