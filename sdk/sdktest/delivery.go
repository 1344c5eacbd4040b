package sdktest

import "fmt"

// Delivery is what a destination promises about the records Conduit sends
// it again after a crash: every record it had not seen acknowledged, in
// order, to a fresh plugin process. Whatever it declares, no record
// acknowledged before a crash may be lost; the crash check (Crash/Write)
// holds it to that, and to what its Delivery adds.
type Delivery int

const (
	// AtLeastOnce: a record sent again may be written again. The crash
	// check requires every record in ReadBack and reports records found
	// more than once in the test log without failing.
	AtLeastOnce Delivery = iota
	// Idempotent: writing a record again leaves one copy of it, as an
	// upsert by key does. The crash check requires every record in
	// ReadBack exactly once.
	Idempotent
	// ExactlyOnce: the destination writes each record once, even when it
	// is sent again (it commits the positions it wrote with the data, say,
	// and acknowledges a record it already holds without writing it). The
	// crash check requires every record in ReadBack exactly once; through
	// ReadBack it cannot tell a record written twice into one copy from
	// one written once.
	ExactlyOnce
)

func (d Delivery) String() string {
	switch d {
	case AtLeastOnce:
		return "AtLeastOnce"
	case Idempotent:
		return "Idempotent"
	case ExactlyOnce:
		return "ExactlyOnce"
	}
	return fmt.Sprintf("Delivery(%d)", int(d))
}

// once says whether d promises each record exactly once in the system.
func (d Delivery) once() bool { return d == Idempotent || d == ExactlyOnce }
