package plugin

import (
	"hash/maphash"
	"slices"
	"unicode/utf8"

	"github.com/conduitio/conduit-commons/opencdc"
)

// A job is what the owner hands the worker: a batch to handle, or the
// acks kept to send.
type job struct {
	kind  jobKind
	batch []opencdc.Record // nil for sendKept
	seq   uint64           // the batch's place among the batches handed out, from 0 on
	// pushedBack tells the owner at once that a Write met a retryable
	// error; nil: nobody listens.
	pushedBack func()
}

type jobKind uint8

const (
	handleBatch jobKind = iota // handle the batch, sending its acks and any kept
	keepBatch                  // handle the batch, keeping its acks and any kept (an ackKeeper's)
	sendKept                   // send the acks kept (an ackKeeper's)
)

// A worker handles the batches the owner hands out, on goroutines that
// the owner keeps for the next (see owner.workOn): one at a time, unless
// the destination's Concurrency allows more. A source's sends each to
// Conduit: the transport takes it at once while Conduit keeps up, and
// makes the worker wait while Conduit does not, so that a busy Conduit
// gets what was read meanwhile in one message. A destination's writes each and acks its records in order
// with the other jobs' (see ackOrder). handle reports whether the
// destination pushed back (a Write met a retryable error).
type worker interface {
	handle(j job) (pushedBack bool, err error)
}

// An ackKeeper is a worker that can keep the acks of a batch (a keepBatch
// job) and send them with the next batch's, in one message (a
// destination's, see keepAcks).
type ackKeeper interface {
	worker
	sendKept() error
}

// keySeed seeds the key hashes of the process.
var keySeed = maphash.MakeSeed()

// keyHash returns a hash of r's key, for keeping the records with one
// key in one lane, or 0 for a record without a key, which has no lane:
// its order to other records is not a key's.
func keyHash(r opencdc.Record) uint64 {
	var key []byte
	switch k := r.Key.(type) {
	case opencdc.RawData:
		key = k
	case opencdc.StructuredData:
		if h, ok := plainKeyHash(k); ok {
			return h
		}
		if len(k) > 0 {
			key = k.Bytes() // JSON, its fields sorted: equal keys, equal bytes
		}
	}
	if len(key) == 0 {
		return 0
	}
	return max(maphash.Bytes(keySeed, key), 1)
}

// plainKeyHash returns the hash keyHash gives k, without encoding it, if k
// has at most 8 fields, each a string, and neither a field's name nor
// its value has a character that JSON escapes: the hash of the very bytes
// of k.Bytes(), {"name":"value",...}, the fields sorted. Else it returns
// false. Encoding a one-field key costs a few µs, which the owner would
// spend for each record.
func plainKeyHash(k opencdc.StructuredData) (uint64, bool) {
	if len(k) == 0 || len(k) > 8 {
		return 0, false
	}
	var space [8]string
	names := space[:0]
	for name, v := range k {
		if s, ok := v.(string); !ok || !plainJSON(name) || !plainJSON(s) {
			return 0, false
		}
		names = append(names, name)
	}
	slices.Sort(names)
	var h maphash.Hash
	h.SetSeed(keySeed)
	for i, name := range names {
		if i == 0 {
			h.WriteString(`{"`)
		} else {
			h.WriteString(`,"`)
		}
		h.WriteString(name)
		h.WriteString(`":"`)
		h.WriteString(k[name].(string))
		h.WriteByte('"')
	}
	h.WriteByte('}')
	return max(h.Sum64(), 1), true
}

// plainJSON reports whether s is valid UTF-8 without a character that a
// JSON encoder escapes (quote, backslash, control characters, <, >, &,
// U+2028 and U+2029), so that its JSON string is s in quotes.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError || r == '\u2028' || r == '\u2029' {
				return false
			}
			i += size - 1
		}
	}
	return true
}
