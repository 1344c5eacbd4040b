package sdk

import "github.com/conduitio/conduit-commons/opencdc"

// Record is the OpenCDC record every Conduit connector and processor speaks.
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

// Metadata, RawData and StructuredData are the record's parts.
type (
	Data           = opencdc.Data
	Metadata       = opencdc.Metadata
	RawData        = opencdc.RawData
	StructuredData = opencdc.StructuredData
	Change         = opencdc.Change
)
