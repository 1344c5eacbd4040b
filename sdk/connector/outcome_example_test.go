package connector_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/connkit/connkit/sdk/connector"
)

// errConnLost stands for what a driver returns when the connection drops.
var errConnLost = errors.New("connection reset by peer")

// Table writes records one by one; a record without a payload violates a
// constraint, and the connection drops once, at the third record.
type Table struct{ dropped bool }

func (t *Table) Open(context.Context) error     { return nil }
func (t *Table) Teardown(context.Context) error { return nil }
func (t *Table) Write(_ context.Context, records []connector.Record) (int, error) {
	for i, r := range records {
		if r.Payload.After == nil {
			// Only this record is nacked; the records after it go to the
			// next Write.
			return i, connector.RecordFault(fmt.Errorf("insert: null value in column %q violates not-null constraint", "payload"))
		}
		if i == 2 && !t.dropped {
			t.dropped = true
			// Not the record's fault: records[i:] are written again later.
			return i, connector.Retryable(fmt.Errorf("insert: %w", errConnLost))
		}
	}
	return len(records), nil
}

func ExampleRecordFault() {
	t := &Table{}
	records := []connector.Record{
		{Payload: connector.Change{After: connector.RawData("a")}},
		{}, // no payload
		{Payload: connector.Change{After: connector.RawData("c")}},
	}
	n, err := t.Write(context.Background(), records)
	fmt.Println(n, err, connector.IsRecordFault(err), connector.IsRetryable(err))

	n, err = t.Write(context.Background(), records[n+1:])
	fmt.Println(n, err)
	// Output:
	// 1 insert: null value in column "payload" violates not-null constraint true false
	// 1 <nil>
}

func ExampleRetryable() {
	t := &Table{}
	records := make([]connector.Record, 4)
	for i := range records {
		records[i].Payload.After = connector.RawData(fmt.Sprint(i))
	}
	n, err := t.Write(context.Background(), records)
	fmt.Println(n, err, connector.IsRetryable(err), errors.Is(err, errConnLost))

	n, err = t.Write(context.Background(), records[n:]) // the SDK retries after a backoff
	fmt.Println(n, err)
	fmt.Println(connector.Retryable(nil), connector.RecordFault(nil))
	// Output:
	// 2 insert: connection reset by peer true true
	// 2 <nil>
	// <nil> <nil>
}
