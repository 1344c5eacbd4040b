package sdk

import (
	"context"
	"log/slog"
	"time"

	"github.com/connkit/connkit/sdk/connector"
)

// The contract a connector implements is declared in package
// sdk/connector, which imports none of the plugin machinery; these names
// are the same ones, so that a connector's main package needs one import.
// Their docs are there.
type (
	Source                = connector.Source
	Acker                 = connector.Acker
	BatchReader           = connector.BatchReader
	Destination           = connector.Destination
	ConcurrentDestination = connector.ConcurrentDestination
	Split                 = connector.Split
	CreatedHook           = connector.CreatedHook
	UpdatedHook           = connector.UpdatedHook
	DeletedHook           = connector.DeletedHook

	Position       = connector.Position
	Operation      = connector.Operation
	Data           = connector.Data
	Metadata       = connector.Metadata
	RawData        = connector.RawData
	StructuredData = connector.StructuredData
	Change         = connector.Change

	Fields           = connector.Fields
	FieldError       = connector.FieldError
	InvalidUTF8Error = connector.InvalidUTF8Error
)

// Record is [connector.Record], whose doc says what each operation fills
// and which metadata comes with it:
//
//	type Record struct {
//		Position  Position  // where the source read it; unique, never empty
//		Operation Operation // OperationCreate, OperationUpdate, OperationDelete, OperationSnapshot
//		Metadata  Metadata  // map[string]string
//		Key       Data      // RawData or StructuredData
//		Payload   Change    // struct{ Before, After Data }: a delete has no After
//	}
type Record = connector.Record

// The splits of a [ConcurrentDestination], the operations of a record and
// the metadata keys connectors use, as in package sdk/connector.
const (
	SplitByKey  = connector.SplitByKey
	SplitFreely = connector.SplitFreely

	OperationCreate   = connector.OperationCreate
	OperationUpdate   = connector.OperationUpdate
	OperationDelete   = connector.OperationDelete
	OperationSnapshot = connector.OperationSnapshot

	// MetadataCollection is [connector.MetadataCollection]: the table,
	// topic or file a record came from.
	MetadataCollection = connector.MetadataCollection
	// MetadataReadAt is [connector.MetadataReadAt]: when the source read
	// the record, in Unix nanoseconds.
	MetadataReadAt = connector.MetadataReadAt
	// MetadataConduitSourceConnectorID is
	// [connector.MetadataConduitSourceConnectorID]: the pipeline's source
	// connector, which Conduit sets.
	MetadataConduitSourceConnectorID = connector.MetadataConduitSourceConnectorID
)

// Create is [connector.Create].
func Create(pos Position, md Metadata, key, after Data) Record {
	return connector.Create(pos, md, key, after)
}

// Update is [connector.Update].
func Update(pos Position, md Metadata, key, before, after Data) Record {
	return connector.Update(pos, md, key, before, after)
}

// Delete is [connector.Delete].
func Delete(pos Position, md Metadata, key, before Data) Record {
	return connector.Delete(pos, md, key, before)
}

// Snapshot is [connector.Snapshot].
func Snapshot(pos Position, md Metadata, key, after Data) Record {
	return connector.Snapshot(pos, md, key, after)
}

// Stamp is [connector.Stamp].
func Stamp(md Metadata) Metadata { return connector.Stamp(md) }

// FieldsOf is [connector.FieldsOf].
func FieldsOf(d Data) (Fields, error) { return connector.FieldsOf(d) }

// CheckUTF8 is [connector.CheckUTF8].
func CheckUTF8(d Data) error { return connector.CheckUTF8(d) }

// RecordFault is [connector.RecordFault].
func RecordFault(err error) error { return connector.RecordFault(err) }

// Retryable is [connector.Retryable].
func Retryable(err error) error { return connector.Retryable(err) }

// RetryableAfter is [connector.RetryableAfter].
func RetryableAfter(err error, after time.Duration) error {
	return connector.RetryableAfter(err, after)
}

// IsRecordFault is [connector.IsRecordFault].
func IsRecordFault(err error) bool { return connector.IsRecordFault(err) }

// IsRetryable is [connector.IsRetryable].
func IsRetryable(err error) bool { return connector.IsRetryable(err) }

// Logger is [connector.Logger].
func Logger(ctx context.Context) *slog.Logger { return connector.Logger(ctx) }

// ContextWithLogger is [connector.ContextWithLogger].
func ContextWithLogger(ctx context.Context, l *slog.Logger) context.Context {
	return connector.ContextWithLogger(ctx, l)
}

// MaxRecordSize is [connector.MaxRecordSize].
func MaxRecordSize(ctx context.Context) int { return connector.MaxRecordSize(ctx) }
