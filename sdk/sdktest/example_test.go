package sdktest_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/connkit/connkit/sdk"
	"github.com/connkit/connkit/sdk/sdktest"
)

func ExampleFailAt() {
	m := &memory{}
	d := sdktest.FailAt(m, 2, errors.New("disk full"))
	n, err := d.Write(context.Background(), []sdk.Record{
		sdktest.TestRecord(1, sdk.OperationCreate, true),
		sdktest.TestRecord(2, sdk.OperationCreate, true),
		sdktest.TestRecord(3, sdk.OperationCreate, true),
	})
	fmt.Println(n, err, len(m.written))
	// Output: 2 disk full 2
}

// FailAfter is a system that goes away while a pipeline runs; DropAt
// breaks the connection under the Write that reaches a record.
func ExampleFailAfter() {
	d := sdktest.FailAfter(&memory{}, 0, errors.New("connection refused"))
	_, err := d.Write(context.Background(), []sdk.Record{sdktest.TestRecord(1, sdk.OperationCreate, true)})
	fmt.Println(err)

	dropped := false
	d = sdktest.DropAt(&memory{}, 1, func() { dropped = true })
	_, _ = d.Write(context.Background(), []sdk.Record{
		sdktest.TestRecord(1, sdk.OperationCreate, true),
		sdktest.TestRecord(2, sdk.OperationCreate, true),
	})
	fmt.Println(dropped)
	// Output:
	// connection refused
	// true
}

func ExampleTestRecord() {
	r := sdktest.TestRecord(7, sdk.OperationUpdate, false)
	fmt.Println(string(r.Position), r.Operation, string(r.Key.Bytes()), string(r.Payload.After.Bytes()))
	// Output: sdktest-7 update {"id":7} {"id":7,"name":"sdktest-7 updated"}
}

func ExampleNewProxy() {
	p, err := sdktest.NewProxy("127.0.0.1:5432") // the system's address
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	// Configure the connector with p.Addr() instead of the system's
	// address; p.Drop() breaks its connections, for example through DropAt.
	fmt.Println(p.Addr() != "")
	// Output: true
}

// DiffRecords says where two lists of records part ways, for a test's
// failure message.
func ExampleDiffRecords() {
	var want []sdk.Record
	for id := range 20 {
		want = append(want, sdktest.TestRecord(id, sdk.OperationCreate, true))
	}
	got := slices.Clone(want)
	got[12] = sdktest.TestRecord(12, sdk.OperationUpdate, true)
	got[15] = sdktest.TestRecord(15, sdk.OperationCreate, false)
	fmt.Println(sdktest.DiffRecords(got, want))
	// Output: record 12 (position "sdktest-12"): operation: got update, want create; 1 more record differs
}

// A connector built on a library that starts a goroutine for the life of
// the process, such as the tail library's inotify watcher, names that
// goroutine's function so that the leak check does not count it; Skip
// turns a check off, saying why, and refuses a name that is no check's.
func ExampleSourceSuite_ignoreGoroutines() {
	var tailSource sdk.Connector // a source that follows a file with github.com/nxadm/tail
	_ = func(t *testing.T) {
		sdktest.Source(t, sdktest.SourceSuite{
			Connector:        tailSource,
			Config:           map[string]string{"path": "testdata/in.txt"},
			IgnoreGoroutines: []string{"github.com/nxadm/tail/watch.(*InotifyTracker).run"},
			Skip:             map[string]string{"Batching": "the source reads one line at a time"},
		})
	}
}
