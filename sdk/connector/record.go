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
// opencdc.readAt ([MetadataReadAt], see [Stamp]); a source sets
// opencdc.collection ([MetadataCollection]) to the table, topic or file a
// record came from. Conduit adds conduit.source.connector.id
// ([MetadataConduitSourceConnectorID]), and opencdc.readAt where a source
// left it out. With schema extraction on (a source's sdk.schema.extract.*
// parameters, on by default), the SDK registers the key's and the
// payload's schemas and sets opencdc.key.schema.subject and .version and
// opencdc.payload.schema.subject and .version. On a destination,
// sdk.schema.extract.key.enabled and sdk.schema.extract.payload.enabled
// (on by default) make the SDK decode, before Write, a RawData key, and
// RawData in Payload.Before and After, whose metadata names a schema, into
// StructuredData with that schema; structured data and data whose record
// names no schema reach Write as they came.
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

// Metadata keys that connectors read and write, as Conduit and every
// OpenCDC connector spell them.
const (
	// MetadataCollection is the table, topic, file or other collection a
	// record came from, which a source that reads several sets.
	MetadataCollection = "opencdc.collection"
	// MetadataReadAt is when the source read the record, in Unix
	// nanoseconds as a decimal string; [Stamp] sets it.
	MetadataReadAt = "opencdc.readAt"
	// MetadataConduitSourceConnectorID is the ID of the pipeline's source
	// connector, which Conduit sets.
	MetadataConduitSourceConnectorID = "conduit.source.connector.id"
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
