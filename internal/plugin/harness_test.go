package plugin

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/batcher"
)

// The tests play Conduit: they run a server on an in-memory stream, send
// it what Conduit sends and read what it sends back.

var discard = slog.New(slog.DiscardHandler)

// stream is an in-memory Run stream: the server sends on out and receives
// from in. Closing in is Conduit closing its side.
type stream[In, Out any] struct {
	ctx       context.Context
	in        chan In
	out       chan Out
	sendDelay time.Duration // how long each Send takes
}

func newStream[In, Out any](ctx context.Context) *stream[In, Out] {
	return &stream[In, Out]{ctx: ctx, in: make(chan In), out: make(chan Out, 1000)}
}

func (s *stream[In, Out]) Send(v Out) error {
	if err := s.ctx.Err(); err != nil {
		return err // a closed stream sends nothing, even with room in out
	}
	time.Sleep(s.sendDelay)
	select {
	case s.out <- v:
		return nil
	case <-s.ctx.Done():
		return s.ctx.Err()
	}
}

func (s *stream[In, Out]) Recv() (In, error) {
	var zero In
	select {
	case v, ok := <-s.in:
		if !ok {
			return zero, io.EOF
		}
		return v, nil
	case <-s.ctx.Done():
		return zero, s.ctx.Err()
	}
}

type sourceStream struct {
	*stream[pconnector.SourceRunRequest, pconnector.SourceRunResponse]
}

func (s sourceStream) Client() pconnector.SourceRunStreamClient { panic("server side only") }

// Send copies the records, as gRPC serializes a message before Send returns:
// the server may reuse its slice afterwards.
func (s sourceStream) Send(resp pconnector.SourceRunResponse) error {
	resp.Records = slices.Clone(resp.Records)
	return s.stream.Send(resp)
}
func (s sourceStream) Server() pconnector.SourceRunStreamServer { return s }

type destinationStream struct {
	*stream[pconnector.DestinationRunRequest, pconnector.DestinationRunResponse]
}

func (s destinationStream) Client() pconnector.DestinationRunStreamClient {
	panic("server side only")
}
func (s destinationStream) Server() pconnector.DestinationRunStreamServer { return s }

// background runs f in a goroutine and returns where its result arrives.
func background(f func() error) <-chan error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	return done
}

// open configures and opens the instance of a server of either role, as
// Conduit does before Run.
func open[C Source | Destination](t testing.TB, i *instance[C]) {
	t.Helper()
	if err := i.configure(nil); err != nil {
		t.Fatal(err)
	}
	if err := i.open(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
}

// openSource returns a server of the fake src under policy p, configured
// and opened.
func openSource(t testing.TB, src testSource, p batcher.Policy) *sourceServer {
	t.Helper()
	s := sourceServerOf(src, p)
	open(t, &s.instance)
	return s
}

// openDestination returns a server of the fake dst under the batching and
// retry policies, configured and opened.
func openDestination(t testing.TB, dst testDestination, batch batcher.Policy, retry Retry) *destinationServer {
	t.Helper()
	d := destinationServerOf(dst, batch, retry)
	open(t, &d.instance)
	return d
}

// running is what a Run of either role has: the stream's context, which
// cancel ends as Conduit closing the stream does, and Run's result.
type running struct {
	t      testing.TB
	start  time.Time // when the run was made: the test's start
	ctx    context.Context
	cancel context.CancelFunc
	done   <-chan error // Run's result, once started
	err    error
}

// newRunning returns a run not started, whose stream ends with the test
// at the latest.
func newRunning(t testing.TB) running {
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	return running{t: t, start: time.Now(), ctx: ctx, cancel: cancel}
}

// wait waits for Run to end and returns its error, again on every call.
func (r *running) wait() error {
	if r.done != nil {
		r.err, r.done = <-r.done, nil
	}
	return r.err
}

// closeStream closes the stream as Conduit does and checks that Run ends
// without an error.
func (r *running) closeStream() {
	r.t.Helper()
	r.cancel()
	if err := r.wait(); err != nil {
		r.t.Fatalf("Run: %v", err)
	}
}

// destinationRun is a destination server and its Run on an in-memory
// stream, which run starts.
type destinationRun struct {
	running
	d   *destinationServer
	st  destinationStream
	log *writeLog // the server's Writes, when a writeLog makes them
}

// newDestinationRun returns the run of d, a server configured and opened.
func newDestinationRun(t testing.TB, d *destinationServer) *destinationRun {
	r := &destinationRun{running: newRunning(t), d: d}
	r.st = destinationStream{newStream[pconnector.DestinationRunRequest, pconnector.DestinationRunResponse](r.ctx)}
	return r
}

// loggedDestination returns the run of a server under p whose Writes w
// makes and logs, timed from the run's start: it sets w's t and start.
func loggedDestination(t *testing.T, p batcher.Policy, w *writeLog) *destinationRun {
	t.Helper()
	return logWrites(t, destinationServerOf(w, p, Retry{}), w)
}

// logWrites configures and opens d, a server whose Writes w makes, and
// returns its run, with w logging the Writes timed from the run's start:
// it sets w's t and start.
func logWrites(t *testing.T, d *destinationServer, w *writeLog) *destinationRun {
	t.Helper()
	open(t, &d.instance)
	r := newDestinationRun(t, d)
	w.t, w.start, r.log = t, r.start, w
	return r
}

// run starts Run and returns r.
func (r *destinationRun) run() *destinationRun {
	r.done = background(func() error { return r.d.Run(r.ctx, r.st) })
	return r
}

// send sends the records numbered from to to in one message.
func (r *destinationRun) send(from, to int) {
	r.sendRecords(numbered(from, to)...)
}

// sendRecords sends recs in one message.
func (r *destinationRun) sendRecords(recs ...opencdc.Record) {
	r.st.in <- pconnector.DestinationRunRequest{Records: recs}
}

// sendEach sends the records numbered from to to, one message each, as
// Conduit's default engine does.
func (r *destinationRun) sendEach(from, to int) {
	for i := from; i <= to; i++ {
		r.send(i, i)
	}
}

// acks returns the acks sent since the last call, as ackTexts renders
// them.
func (r *destinationRun) acks() []string {
	var resps []pconnector.DestinationRunResponse
	for {
		select {
		case m := <-r.st.out:
			resps = append(resps, m)
		default:
			return ackTexts(resps...)
		}
	}
}

// stop calls Stop with LastPosition last ("": none), with a deadline a
// minute away, so that a Stop that hangs fails the test with an error
// instead of hanging it.
func (r *destinationRun) stop(last string) error {
	ctx, cancel := context.WithTimeout(r.t.Context(), time.Minute)
	defer cancel()
	var pos opencdc.Position
	if last != "" {
		pos = opencdc.Position(last)
	}
	_, err := r.d.Stop(ctx, pconnector.DestinationStopRequest{LastPosition: pos})
	return err
}

// stopResult is what a Stop returned, and when.
type stopResult struct {
	err error
	at  time.Duration // since the test's start
}

// stopAsync calls stop in the background and returns where its result
// arrives.
func (r *destinationRun) stopAsync(last string) <-chan stopResult {
	done := make(chan stopResult, 1)
	go func() {
		err := r.stop(last)
		done <- stopResult{err: err, at: time.Since(r.start)}
	}()
	return done
}

// finish stops at last, as Conduit does once it has sent the record there,
// ends the run (see end) and returns the acks sent since those last read.
func (r *destinationRun) finish(last string) []string {
	r.t.Helper()
	if _, err := r.d.Stop(r.t.Context(), pconnector.DestinationStopRequest{LastPosition: opencdc.Position(last)}); err != nil {
		r.t.Fatal(err)
	}
	acks := r.acks()
	r.end()
	return acks
}

// teardown calls Teardown on the server and returns its error.
func (r *destinationRun) teardown() error {
	_, err := r.d.Teardown(r.t.Context(), pconnector.DestinationTeardownRequest{})
	return err
}

// end closes the stream, checks that Run ends without an error, tears the
// server down, and fails the test if any ack came after those last read.
func (r *destinationRun) end() {
	r.t.Helper()
	r.closeStream()
	if err := r.teardown(); err != nil {
		r.t.Fatalf("Teardown: %v", err)
	}
	if late := r.acks(); len(late) > 0 {
		r.t.Fatalf("acks after those last read: %v", late)
	}
}

// sourceRun is a source server and its Run on an in-memory stream, which
// run starts.
type sourceRun struct {
	running
	s  *sourceServer
	st sourceStream
}

// newSourceRun returns the run of s, a server configured and opened.
func newSourceRun(t testing.TB, s *sourceServer) *sourceRun {
	r := &sourceRun{running: newRunning(t), s: s}
	r.st = sourceStream{newStream[pconnector.SourceRunRequest, pconnector.SourceRunResponse](r.ctx)}
	return r
}

// holding has the stream hold n messages the test has not taken, as
// Conduit's transport does, before the server's Send waits (1000 unless
// set). It returns r.
func (r *sourceRun) holding(n int) *sourceRun {
	r.st.out = make(chan pconnector.SourceRunResponse, n)
	return r
}

// run starts Run and returns r.
func (r *sourceRun) run() *sourceRun {
	r.done = background(func() error { return r.s.Run(r.ctx, r.st) })
	return r
}

// sent returns the positions of each message sent since the last call.
func (r *sourceRun) sent() [][]string {
	var out [][]string
	for {
		select {
		case m := <-r.st.out:
			out = append(out, positions(m))
		default:
			return out
		}
	}
}

// receive takes the messages sent until n records came, passing each
// message's positions to each, and fails the test unless the records are
// "1" to "n", in order.
func (r *sourceRun) receive(n int, each func(m []string)) {
	r.t.Helper()
	var got []string
	for len(got) < n {
		m := positions(<-r.st.out)
		each(m)
		got = append(got, m...)
	}
	if !slices.Equal(got, upTo(n)) {
		r.t.Fatalf("received %v, want the records 1 to %d in order", got, n)
	}
}

// ack acks the records at the positions ps in one request.
func (r *sourceRun) ack(ps ...string) {
	req := pconnector.SourceRunRequest{}
	for _, p := range ps {
		req.AckPositions = append(req.AckPositions, opencdc.Position(p))
	}
	r.st.in <- req
}

// stop calls Stop and returns the last position it reports.
func (r *sourceRun) stop() (string, error) {
	resp, err := r.s.Stop(r.t.Context(), pconnector.SourceStopRequest{})
	return string(resp.LastPosition), err
}

// teardown calls Teardown on the server and returns its error.
func (r *sourceRun) teardown() error {
	_, err := r.s.Teardown(r.t.Context(), pconnector.SourceTeardownRequest{})
	return err
}

// end closes the stream, checks that Run ends without an error, and tears
// the server down.
func (r *sourceRun) end() {
	r.t.Helper()
	r.closeStream()
	if err := r.teardown(); err != nil {
		r.t.Fatalf("Teardown: %v", err)
	}
}

// records returns records at positions, one each, without data.
func records(positions ...string) []opencdc.Record {
	out := make([]opencdc.Record, len(positions))
	for i, p := range positions {
		out[i] = opencdc.Record{Position: opencdc.Position(p)}
	}
	return out
}

// numbered returns records at positions "from" to "to", with a payload of
// ten bytes.
func numbered(from, to int) []opencdc.Record {
	var out []opencdc.Record
	for i := from; i <= to; i++ {
		out = append(out, opencdc.Record{Position: opencdc.Position(strconv.Itoa(i)), Payload: opencdc.Change{After: opencdc.RawData("0123456789")}})
	}
	return out
}

// upTo returns the positions "1" to "n".
func upTo(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = strconv.Itoa(i + 1)
	}
	return out
}

// positionList renders the records' positions as "[1 2 3]".
func positionList(records []opencdc.Record) string {
	p := make([]string, len(records))
	for i, r := range records {
		p[i] = string(r.Position)
	}
	return "[" + strings.Join(p, " ") + "]"
}

// positions returns the positions of the records a source sent.
func positions(resps ...pconnector.SourceRunResponse) []string {
	var out []string
	for _, r := range resps {
		for _, rec := range r.Records {
			out = append(out, string(rec.Position))
		}
	}
	return out
}

// ackTexts renders acks as "pos" for a positive ack and "pos!error" for a nack.
func ackTexts(resps ...pconnector.DestinationRunResponse) []string {
	var out []string
	for _, r := range resps {
		for _, a := range r.Acks {
			s := string(a.Position)
			if a.Error != "" {
				s += "!" + a.Error
			}
			out = append(out, s)
		}
	}
	return out
}

// nacksInOrder returns the error of each ack that ackTexts rendered, ""
// for a positive one, by record: the acks must be for records "1" to "n",
// each once, in order.
func nacksInOrder(t testing.TB, acks []string, n int) []string {
	t.Helper()
	if len(acks) != n {
		t.Fatalf("%d acks for %d records", len(acks), n)
	}
	nacks := make([]string, n)
	for i, a := range acks {
		pos, nack, _ := strings.Cut(a, "!")
		if pos != strconv.Itoa(i+1) {
			t.Fatalf("ack %d is for position %s", i+1, pos)
		}
		nacks[i] = nack
	}
	return nacks
}
