package connector_test

import (
	"fmt"
	"time"

	"github.com/connkit/connkit/sdk/connector"
)

func ExampleCreate() {
	r := connector.Create(connector.Position("7"), connector.Metadata{connector.MetadataCollection: "users"},
		connector.StructuredData{"id": 7}, connector.StructuredData{"id": 7, "name": "Ada"})
	readAt, err := r.Metadata.GetReadAt()
	fmt.Println(r.Operation, r.Metadata[connector.MetadataCollection], r.Payload.After)
	fmt.Println("read just now:", err == nil && time.Since(readAt) < time.Minute)
	// Output:
	// create users map[id:7 name:Ada]
	// read just now: true
}

func ExampleUpdate() {
	r := connector.Update(connector.Position("8"), nil, connector.RawData("7"), connector.RawData(`{"n":1}`), connector.RawData(`{"n":2}`))
	fmt.Println(r.Operation, string(r.Payload.Before.Bytes()), string(r.Payload.After.Bytes()))
	_, err := r.Metadata.GetReadAt()
	fmt.Println("readAt set:", err == nil)
	// Output:
	// update {"n":1} {"n":2}
	// readAt set: true
}

func ExampleDelete() {
	r := connector.Delete(connector.Position("9"), nil, connector.RawData("7"), nil)
	fmt.Println(r.Operation, string(r.Key.Bytes()), r.Payload.After == nil)
	// Output: delete 7 true
}

// A source that reads a whole transaction at once can give its records the
// transaction's time: a readAt already in the metadata is kept.
func ExampleSnapshot() {
	txTime := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	md := connector.Metadata{}
	md.SetReadAt(txTime)
	r := connector.Snapshot(connector.Position("t1/7"), md, connector.RawData("7"), connector.RawData(`{"id":7}`))
	fmt.Println(r.Operation, r.Metadata[connector.MetadataReadAt])
	// Output: snapshot 1767323045000000000
}

// Stamp sets opencdc.readAt on metadata a source makes itself.
func ExampleStamp() {
	md := connector.Stamp(connector.Metadata{connector.MetadataCollection: "users"})
	_, err := md.GetReadAt()
	fmt.Println(md[connector.MetadataCollection], err == nil)
	// Output: users true
}
