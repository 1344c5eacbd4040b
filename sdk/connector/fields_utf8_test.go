package connector

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/matryer/is"
)

func TestFieldsOfInvalidUTF8(t *testing.T) {
	tests := []struct {
		name  string
		data  string
		field string // the field named, "" if the data is accepted
		isKey bool
	}{
		{"value", "{\"id\":1,\"name\":\"a\xff\xfeb\"}", "name", false},
		{"name", "{\"id\":1,\"n\xffme\":\"x\"}", "n\xffme", true},
		{"nested value", "{\"a\":{\"b\":{\"c\":\"\xff\"}}}", "a.b.c", false},
		{"nested name", "{\"a\":{\"ok\":1,\"\xfe\":2}}", "a.\xfe", true},
		{"in a list", "{\"tags\":[\"x\",{\"y\":1},[1],\"z\xff\"]}", "tags[3]", false},
		{"in a list of lists", "{\"m\":[[\"ok\"],[\"ok\",\"\xc3\"]]}", "m[1][1]", false},
		{"after a nested object", "{\"a\":{\"b\":\"ok\"},\"c\":\"\xff\"}", "c", false},
		{"truncated sequence", "{\"s\":\"caf\xc3\"}", "s", false},
		{"valid multibyte", "{\"s\":\"café ✓ 😀\",\"ünï\":[\"ok\"]}", "", false},
		{"escaped replacement character", `{"s":"\ufffd"}`, "", false},
		{"escaped pair", `{"s":"\ud83d\ude00 \uD83D\uDE00"}`, "", false},
		{"escaped backslash then u", `{"s":"\\ud800"}`, "", false},
		{"lone high surrogate", `{"s":"x\ud800y"}`, "s", false},
		{"high surrogate at the end", `{"a":{"s":"\ud800"}}`, "a.s", false},
		{"high surrogate then another escape", `{"s":"\ud800\n"}`, "s", false},
		{"lone low surrogate", `{"l":["\udc00"]}`, "l[0]", false},
		{"surrogate in a name", `{"\udfff":1}`, "\\udfff", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			f, err := FieldsOf(RawData(tt.data))
			if tt.field == "" {
				is.NoErr(err)
				is.True(len(f) > 0)
				return
			}
			var u *InvalidUTF8Error
			is.True(errors.As(err, &u)) // refused, not replaced
			is.Equal(u.Field, tt.field)
			is.Equal(u.Name, tt.isKey)
			is.Equal(f, nil)
		})
	}
}

func TestFieldsOfInvalidUTF8Message(t *testing.T) {
	is := is.New(t)
	_, err := FieldsOf(RawData("{\"name\":\"\xff\xfe\"}"))
	is.Equal(err.Error(), `field "name": its value is not valid UTF-8 text (refused: replacing the invalid bytes would change it)`)
	_, err = FieldsOf(RawData("{\"a\":{\"\xff\":1}}"))
	is.Equal(err.Error(), `field "a.\xff": its name is not valid UTF-8 text (refused: replacing the invalid bytes would change it)`)
}

// Invalid bytes outside a string are not JSON: the syntax error says so.
func TestFieldsOfInvalidUTF8OutsideStrings(t *testing.T) {
	is := is.New(t)
	_, err := FieldsOf(RawData("{\"a\":1}\xff"))
	var u *InvalidUTF8Error
	is.True(err != nil)
	is.True(!errors.As(err, &u))
}

// Structured data is handed over as it is: a string holding invalid UTF-8
// keeps its bytes, for the connector to write exactly or refuse.
func TestFieldsOfStructuredKeepsBytes(t *testing.T) {
	is := is.New(t)
	f, err := FieldsOf(StructuredData{"name": "a\xff\xfeb", "nested": map[string]any{"x": "\xff"}})
	is.NoErr(err)
	s, err := f.String("name")
	is.NoErr(err)
	is.Equal(s, "a\xff\xfeb")
	n, err := f.Fields("nested")
	is.NoErr(err)
	x, err := n.String("x")
	is.NoErr(err)
	is.Equal(x, "\xff")
}

func BenchmarkFieldsOfRaw(b *testing.B) {
	for _, bm := range []struct{ name, data string }{
		{"small", `{"id":12345,"name":"Ada Lovelace","email":"ada@example.com","active":true}`},
		{"nested", `{"id":1,"user":{"name":"Zoë Ünïcode ✓","tags":["a","b","c"],"address":{"city":"Zürich","zip":"8001"}},"score":99.5,"notes":"` +
			"lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore" + `"}`},
	} {
		b.Run(bm.name, func(b *testing.B) {
			data := RawData(bm.data)
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := FieldsOf(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestCheckUTF8(t *testing.T) {
	tests := []struct {
		name  string
		data  Data
		field string // "" if accepted
		isKey bool
	}{
		{"nil", nil, "", false},
		{"raw bytes", RawData("\xff"), "", false},
		{"valid", StructuredData{"s": "café", "n": 1, "l": []any{"ü", map[string]any{"x": "✓"}}}, "", false},
		{"value", StructuredData{"ok": "x", "s": "a\xffb"}, "s", false},
		{"name", StructuredData{"\xfe": 1}, "\xfe", true},
		{"nested", StructuredData{"a": map[string]any{"b": StructuredData{"c": "\xff"}}}, "a.b.c", false},
		{"in a list", StructuredData{"l": []any{"ok", []any{1, "\xc3"}}}, "l[1][1]", false},
		{"name in a list", StructuredData{"l": []any{map[string]any{"\xff": 1}}}, "l[0].\xff", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			err := CheckUTF8(tt.data)
			if tt.field == "" {
				is.NoErr(err)
				return
			}
			var u *InvalidUTF8Error
			is.True(errors.As(err, &u))
			is.Equal(u.Field, tt.field)
			is.Equal(u.Name, tt.isKey)
		})
	}
}

// FuzzFieldsOfNeverReplaces holds FieldsOf to its word: what it accepts
// decodes without U+FFFD, unless the data spelled U+FFFD itself.
func FuzzFieldsOfNeverReplaces(f *testing.F) {
	for _, s := range []string{`{"a":"b"}`, "{\"a\":\"\xff\"}", `{"a":"\ud800"}`, `{"a":["\ud83d\ude00",{"\udc00":1}]}`, `{"\\":"\\u"}`, `{"a":"\ufffd"}`, "{\"a\":1}\\"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fields, err := FieldsOf(RawData(b))
		spelled := bytes.Contains(b, []byte("\uFFFD")) || bytes.Contains(bytes.ToLower(b), []byte(`\ufffd`))
		if err != nil || spelled {
			return
		}
		if j, _ := json.Marshal(fields); bytes.Contains(j, []byte("\uFFFD")) || bytes.Contains(j, []byte(`\ufffd`)) {
			t.Fatalf("FieldsOf(%q) replaced something: %s", b, j)
		}
	})
}
