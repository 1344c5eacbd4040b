package connector

import (
	"strconv"
	"time"
)

// Create returns a record of a row, document or message that was created.
// Like every constructor here it sets opencdc.readAt (see [Stamp]), which
// formats such as Debezium's take their timestamp from.
func Create(pos Position, md Metadata, key, after Data) Record {
	return Record{Position: pos, Operation: OperationCreate, Metadata: Stamp(md), Key: key, Payload: Change{After: after}}
}

// Update returns a record of a change to existing data: before may be nil
// when the source does not know the old state.
func Update(pos Position, md Metadata, key, before, after Data) Record {
	return Record{Position: pos, Operation: OperationUpdate, Metadata: Stamp(md), Key: key, Payload: Change{Before: before, After: after}}
}

// Delete returns a record of a deletion: before may be nil when the source
// knows only the key.
func Delete(pos Position, md Metadata, key, before Data) Record {
	return Record{Position: pos, Operation: OperationDelete, Metadata: Stamp(md), Key: key, Payload: Change{Before: before}}
}

// Snapshot returns a record of data as it was found when the source read
// what already existed, before following changes.
func Snapshot(pos Position, md Metadata, key, after Data) Record {
	return Record{Position: pos, Operation: OperationSnapshot, Metadata: Stamp(md), Key: key, Payload: Change{After: after}}
}

// Stamp sets md's opencdc.readAt to the current time in Unix nanoseconds,
// as a decimal string, unless md already has one (a source that reads a
// transaction at once may give all its records the same time), and
// returns md; a nil md becomes a new Metadata. md is modified, not copied.
func Stamp(md Metadata) Metadata {
	if md == nil {
		md = Metadata{}
	}
	if _, ok := md[MetadataReadAt]; !ok {
		md[MetadataReadAt] = strconv.FormatInt(time.Now().UnixNano(), 10)
	}
	return md
}
