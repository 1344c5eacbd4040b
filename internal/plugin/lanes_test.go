package plugin

import (
	"testing"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/matryer/is"
)

// TestLanesOfRecordsWithoutAKey: records without a key of one collection
// create beside each other, but one that updates or deletes waits for the
// Writes in flight with that collection's records without a key, and they
// for it; other collections and keyed records go on.
func TestLanesOfRecordsWithoutAKey(t *testing.T) {
	is := is.New(t)
	rec := func(op opencdc.Operation, collection string, key opencdc.Data) opencdc.Record {
		return opencdc.Record{Operation: op, Key: key, Metadata: opencdc.Metadata{opencdc.MetadataCollection: collection}}
	}
	create := rec(opencdc.OperationCreate, "t", nil)
	update := rec(opencdc.OperationUpdate, "t", opencdc.StructuredData{})
	keyed := rec(opencdc.OperationUpdate, "t", opencdc.RawData("1"))
	l := &lanes{claimed: map[uint64]claim{}}
	free := func(rs ...opencdc.Record) int { n, _ := l.free(rs); return n }

	_, inserts := l.free([]opencdc.Record{create, rec(opencdc.OperationSnapshot, "t", nil)})
	l.claim(inserts)
	is.Equal(free(create, create), 2)                         // creates commute
	is.Equal(free(create, update), 1)                         // an update waits for the creates in flight
	is.Equal(free(rec(opencdc.OperationDelete, "u", nil)), 1) // another collection's
	is.Equal(free(keyed, keyed), 2)                           // a keyed record has its key's lane
	l.release(inserts)
	is.Equal(free(update), 1)

	_, changes := l.free([]opencdc.Record{update})
	l.claim(changes)
	is.Equal(free(create), 0) // a create waits for an update in flight
	is.Equal(free(update), 0)
	is.Equal(free(keyed), 1)
	l.release(changes)
	is.Equal(len(l.claimed), 0)
}
