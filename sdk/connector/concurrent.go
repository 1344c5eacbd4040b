package connector

// ConcurrentDestination is a [Destination] whose Write is safe to call
// while other Writes of it run, on other records. The SDK then keeps
// several Writes in flight together (the sdk.write.concurrency parameter:
// a fixed number, or auto, which adds Writes while they bring more records
// per second, stops where more would only wait longer, and backs off on
// the errors the destination marks [Retryable]),
// hands them records as WriteSplit says, and acknowledges records in their
// order, whatever order the Writes end in: a record is acknowledged once
// every record before it is settled. Everything else about Write holds as
// [Destination] states it.
type ConcurrentDestination interface {
	Destination
	// WriteSplit says how records may be divided among Writes in flight.
	WriteSplit() Split
}

// Split says how a [ConcurrentDestination]'s records may be divided among
// Writes in flight together.
type Split int

const (
	// SplitByKey keeps the records with equal keys in one lane: a record is
	// handed to a Write only once every earlier record with its key is
	// settled, so that they are written in their order. Records without a
	// key share their collection's lane (opencdc.collection): an update or
	// a delete, which can name its row only by the row itself, waits for
	// every earlier one to settle, and every later one waits for it;
	// creates and snapshots go together freely.
	SplitByKey Split = iota + 1
	// SplitFreely lets any record go in any Write.
	SplitFreely
)
