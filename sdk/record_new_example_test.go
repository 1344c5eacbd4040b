package sdk_test

import (
	"fmt"
	"time"

	"github.com/connkit/connkit/sdk"
)

func ExampleCreate() {
	r := sdk.Create(sdk.Position("7"), sdk.Metadata{"opencdc.collection": "users"},
		sdk.StructuredData{"id": 7}, sdk.StructuredData{"id": 7, "name": "Ada"})
	readAt, err := r.Metadata.GetReadAt()
	fmt.Println(r.Operation, r.Metadata["opencdc.collection"], r.Payload.After)
	fmt.Println("read just now:", err == nil && time.Since(readAt) < time.Minute)
	// Output:
	// create users map[id:7 name:Ada]
	// read just now: true
}

func ExampleUpdate() {
	r := sdk.Update(sdk.Position("8"), nil, sdk.RawData("7"), sdk.RawData(`{"n":1}`), sdk.RawData(`{"n":2}`))
	fmt.Println(r.Operation, string(r.Payload.Before.Bytes()), string(r.Payload.After.Bytes()))
	_, err := r.Metadata.GetReadAt()
	fmt.Println("readAt set:", err == nil)
	// Output:
	// update {"n":1} {"n":2}
	// readAt set: true
}

func ExampleDelete() {
	r := sdk.Delete(sdk.Position("9"), nil, sdk.RawData("7"), nil)
	fmt.Println(r.Operation, string(r.Key.Bytes()), r.Payload.After == nil)
	// Output: delete 7 true
}

// A source that reads a whole transaction at once can give its records the
// transaction's time: a readAt already in the metadata is kept.
func ExampleSnapshot() {
	txTime := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	md := sdk.Metadata{}
	md.SetReadAt(txTime)
	r := sdk.Snapshot(sdk.Position("t1/7"), md, sdk.RawData("7"), sdk.RawData(`{"id":7}`))
	fmt.Println(r.Operation, r.Metadata["opencdc.readAt"])
	// Output: snapshot 1767323045000000000
}

// Stamp sets opencdc.readAt on metadata a source makes itself.
func ExampleStamp() {
	md := sdk.Stamp(sdk.Metadata{"opencdc.collection": "users"})
	_, err := md.GetReadAt()
	fmt.Println(md["opencdc.collection"], err == nil)
	// Output: users true
}
