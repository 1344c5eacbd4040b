package plugin

import (
	"hash/maphash"
	"slices"
	"unicode/utf8"

	"github.com/conduitio/conduit-commons/opencdc"
)

// lanes keep each key's records in order among Writes in flight together:
// a record goes to a Write only once no Write in flight holds its key. A
// record without a key has no lane.
type lanes struct {
	held map[uint64]int // the records of the Writes in flight, by key hash
}

// free returns how many records of next, from the oldest on, have a key
// that no Write in flight holds, and each one's key hash (0: none).
func (l *lanes) free(next []opencdc.Record) (n int, keys []uint64) {
	keys = make([]uint64, 0, len(next))
	for _, r := range next {
		h := keyHash(r)
		if h != 0 && l.held[h] > 0 {
			break
		}
		keys = append(keys, h)
	}
	return len(keys), keys
}

// hold notes a Write in flight with records of these key hashes.
func (l *lanes) hold(keys []uint64) {
	for _, h := range keys {
		if h != 0 {
			l.held[h]++
		}
	}
}

// release notes the end of a Write that hold noted.
func (l *lanes) release(keys []uint64) {
	for _, h := range keys {
		if h == 0 {
			continue
		}
		if l.held[h]--; l.held[h] == 0 {
			delete(l.held, h)
		}
	}
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
