package connector

import "github.com/conduitio/conduit-commons/opencdc"

// Record is the OpenCDC record every Conduit connector and processor
// speaks (opencdc.Record, from conduit-commons):
//
//	type Record struct {
//		Position  Position  // where the source read it; unique, never empty
//		Operation Operation // OperationCreate, OperationUpdate, OperationDelete, OperationSnapshot
//		Metadata  Metadata  // map[string]string
//		Key       Data      // RawData or StructuredData; nil if there is none
//		Payload   Change    // struct{ Before, After Data }
//	}
//
// What each operation fills in Payload ("none" is nil where the record is
// made, and an empty RawData once it has come through Conduit, which fills
// both sides):
//
//	create, snapshot  After: the data as it is; Before: none
//	update            After: the new data; Before: the old, or none when the source does not know it
//	delete            After: none; Before: the old data, or none when the source knows only the key
//
// A destination switches on Operation before it reads Payload.After: a
// delete carries no data there, and a type assertion such as
// After.(StructuredData) without its ok panics on it. Data is RawData
// (bytes, such as a JSON document a source did not parse) or
// StructuredData (map[string]any); [FieldsOf] reads either as fields, and
// d == nil || len(d.Bytes()) == 0 says a Data d is none.
//
// Metadata: [Create], [Update], [Delete] and [Snapshot] set
// opencdc.readAt (see [Stamp]); a source sets opencdc.collection to the
// table, topic or file a record came from. Conduit adds
// conduit.source.connector.id, and opencdc.readAt where a source left it
// out. With schema extraction on (the sdk.schema.extract.*
// parameters, on by default), the SDK registers the key's and the
// payload's schemas and sets opencdc.key.schema.subject and .version and
// opencdc.payload.schema.subject and .version; a destination's
// sdk.schema.decode.* parameters decode the data with them.
type Record = opencdc.Record

// Position identifies a record in its source. Conduit stores the position of
// the last acknowledged record and hands it back to [Source.Open] on restart.
type Position = opencdc.Position

// Operation says what happened to the data a record carries.
type Operation = opencdc.Operation

// The operations a record can carry.
const (
	OperationCreate   = opencdc.OperationCreate
	OperationUpdate   = opencdc.OperationUpdate
	OperationDelete   = opencdc.OperationDelete
	OperationSnapshot = opencdc.OperationSnapshot
)

// Data, Metadata, RawData, StructuredData and Change are the record's
// parts, as [Record] shows them.
type (
	Data           = opencdc.Data
	Metadata       = opencdc.Metadata
	RawData        = opencdc.RawData
	StructuredData = opencdc.StructuredData
	Change         = opencdc.Change
)
