package connector

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// InvalidUTF8Error is text that is not valid UTF-8: a field's value, or
// its name. Decoding it would replace the invalid bytes with U+FFFD, a
// silent change, so it is refused instead. In raw JSON, a \u escape of a
// lone UTF-16 surrogate (\ud800 not followed by \udc00-\udfff), which
// stands for no character, is refused the same way.
type InvalidUTF8Error struct {
	// Field is the field's path: names joined with dots and list indexes
	// in brackets, e.g. address.lines[1]. Callers that know where the
	// data came from prefix it (payload.after.address.lines[1]).
	Field string
	// Name is true when the field's name, not its value, is invalid.
	Name bool
}

func (e *InvalidUTF8Error) Error() string {
	what := "its value"
	if e.Name {
		what = "its name"
	}
	return fmt.Sprintf("field %q: %s is not valid UTF-8 text (refused: replacing the invalid bytes would change it)", e.Field, what)
}

// invalidUTF8 finds the first string in the JSON document d whose bytes
// are not valid UTF-8 and returns the error naming it, or nil if there is
// none or d is not JSON (which decoding then reports). Invalid bytes are
// only valid JSON inside strings, so each string's raw bytes, between the
// decoder's offsets before and after its token, tell.
func invalidUTF8(d []byte) *InvalidUTF8Error {
	// level is an object or a list being read: the name of its field being
	// read, or the index of its element being read.
	type level struct {
		list    bool
		index   int
		name    string
		wantKey bool
	}
	var stack []level
	path := func() string {
		var b bytes.Buffer
		for _, l := range stack {
			switch {
			case l.list:
				b.WriteString("[" + strconv.Itoa(l.index) + "]")
			default:
				if b.Len() > 0 {
					b.WriteByte('.')
				}
				b.WriteString(l.name)
			}
		}
		return b.String()
	}
	// done ends the value being read in the innermost level.
	done := func() {
		if n := len(stack); n > 0 {
			if stack[n-1].list {
				stack[n-1].index++
			} else {
				stack[n-1].wantKey = true
			}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(d))
	for from := int64(0); ; {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		to := dec.InputOffset()
		raw := d[from:to]
		from = to
		isName := len(stack) > 0 && !stack[len(stack)-1].list && stack[len(stack)-1].wantKey
		if isName {
			stack[len(stack)-1].name, _ = tok.(string)
			stack[len(stack)-1].wantKey = false
		}
		if !utf8.Valid(raw) || loneSurrogate(raw) {
			if isName { // the name as written, not as decoded
				raw = raw[bytes.IndexByte(raw, '"')+1 : bytes.LastIndexByte(raw, '"')]
				stack[len(stack)-1].name = string(raw)
			}
			return &InvalidUTF8Error{Field: path(), Name: isName}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, level{wantKey: true})
		case json.Delim('['):
			stack = append(stack, level{list: true})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			done()
		default:
			if !isName {
				done()
			}
		}
	}
}

// loneSurrogate reports whether the JSON text b holds a \u escape of a
// UTF-16 surrogate that is not half of a pair, which encoding/json
// decodes as U+FFFD.
func loneSurrogate(b []byte) bool {
	for i := 0; i < len(b); i++ {
		j := bytes.IndexByte(b[i:], '\\')
		if j < 0 {
			return false
		}
		i += j + 1 // the escaped character, which the loop steps over
		if i >= len(b) || b[i] != 'u' {
			continue
		}
		r := hex4(b[i+1:])
		i += 4
		switch {
		case r >= 0xd800 && r < 0xdc00:
			if i+6 < len(b) && b[i+1] == '\\' && b[i+2] == 'u' {
				if low := hex4(b[i+3:]); low >= 0xdc00 && low < 0xe000 {
					i += 6
					continue
				}
			}
			return true
		case r >= 0xdc00 && r < 0xe000:
			return true
		}
	}
	return false
}

// hex4 is the value of the four hex digits b starts with, or -1.
func hex4(b []byte) int {
	if len(b) < 4 {
		return -1
	}
	n, err := strconv.ParseUint(string(b[:4]), 16, 16)
	if err != nil {
		return -1
	}
	return int(n)
}

// CheckUTF8 returns nil if every string of structured data d, names and
// values at any depth (in maps and lists), is valid UTF-8, and otherwise
// an [*InvalidUTF8Error] naming one that is not. Raw data is bytes, and
// is not checked. A connector that writes strings where only valid text
// goes (JSON, a text column) uses it to refuse a record rather than let
// an encoder replace the invalid bytes.
func CheckUTF8(d Data) error {
	if s, ok := d.(StructuredData); ok {
		if err := checkUTF8("", map[string]any(s)); err != nil {
			return err
		}
	}
	return nil
}

// checkUTF8 checks v, the value at path.
func checkUTF8(path string, v any) *InvalidUTF8Error {
	switch v := v.(type) {
	case string:
		if !utf8.ValidString(v) {
			return &InvalidUTF8Error{Field: path}
		}
	case StructuredData:
		return checkUTF8(path, map[string]any(v))
	case map[string]any:
		for k, x := range v {
			p := k
			if path != "" {
				p = path + "." + k
			}
			if !utf8.ValidString(k) {
				return &InvalidUTF8Error{Field: p, Name: true}
			}
			if err := checkUTF8(p, x); err != nil {
				return err
			}
		}
	case []any:
		for i, x := range v {
			if err := checkUTF8(path+"["+strconv.Itoa(i)+"]", x); err != nil {
				return err
			}
		}
	}
	return nil
}
