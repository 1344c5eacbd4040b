package plugin

import (
	"hash/maphash"
	"slices"
	"unicode/utf8"

	"github.com/conduitio/conduit-commons/opencdc"
)

// lanes keep records in order among Writes in flight together: a record
// goes to a Write only once no Write in flight claims its lane in a way it
// must follow. A keyed record's lane is its key's, and it follows every
// record of it. A record without a key has its collection's lane of
// records without a key: one that updates or deletes (naming its row by
// the row itself, which an earlier record may have written) follows every
// record of the lane, and a record of the lane follows it; creates and
// snapshots of the lane go together freely, as they commute.
type lanes struct {
	claimed map[uint64]claim // the lanes of the Writes in flight, by hash
}

// claim counts a lane's records in Writes in flight: all of them, and
// those that later records of the lane must follow.
type claim struct{ all, followed int }

// lane is a record's lane: its hash, and whether the lane's later records
// must follow it.
type lane struct {
	hash     uint64
	followed bool
}

// free returns how many records of next, from the oldest on, may go in a
// Write beside those in flight, and each one's lane.
func (l *lanes) free(next []opencdc.Record) (n int, ls []lane) {
	ls = make([]lane, 0, len(next))
	for _, r := range next {
		ln := laneOf(r)
		h := l.claimed[ln.hash]
		if h.followed > 0 || ln.followed && h.all > 0 {
			break
		}
		ls = append(ls, ln)
	}
	return len(ls), ls
}

// claim notes a Write in flight with records of these lanes.
func (l *lanes) claim(ls []lane) {
	for _, ln := range ls {
		h := l.claimed[ln.hash]
		h.all++
		if ln.followed {
			h.followed++
		}
		l.claimed[ln.hash] = h
	}
}

// release notes the end of a Write whose lanes claim noted.
func (l *lanes) release(ls []lane) {
	for _, ln := range ls {
		h := l.claimed[ln.hash]
		h.all--
		if ln.followed {
			h.followed--
		}
		if h.all == 0 {
			delete(l.claimed, ln.hash)
		} else {
			l.claimed[ln.hash] = h
		}
	}
}

// keySeed seeds the lane hashes of the process; keylessSeed those of
// collections' records without a key, apart from any key's.
var keySeed, keylessSeed = maphash.MakeSeed(), maphash.MakeSeed()

// laneOf returns r's lane.
func laneOf(r opencdc.Record) lane {
	if h := keyHash(r); h != 0 {
		return lane{hash: h, followed: true}
	}
	collection := r.Metadata[opencdc.MetadataCollection]
	changes := r.Operation == opencdc.OperationUpdate || r.Operation == opencdc.OperationDelete
	return lane{hash: maphash.String(keylessSeed, collection), followed: changes}
}

// keyHash returns a hash of r's key, or 0 for a record without a key.
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
