package connector

import (
	"errors"
	"testing"
	"time"

	"github.com/matryer/is"
)

func TestFieldsOf(t *testing.T) {
	tests := []struct {
		name    string
		data    Data
		want    int    // number of fields
		wantErr string // the error, if any
	}{
		{"nil", nil, 0, ""},
		{"empty raw", RawData(" "), 0, ""},
		{"structured", StructuredData{"a": 1}, 1, ""},
		{"raw object", RawData(`{"a": 1, "b": "x"}`), 2, ""},
		{"raw text", RawData("hello"), 0, `sdk: the data is raw but not a JSON object ("hello"): invalid character 'h' looking for beginning of value`},
		{"raw array", RawData("[1,2]"), 0, `sdk: the data is raw but not a JSON object ("[1,2]"): json: cannot unmarshal array into Go value of type map[string]interface {}`},
		{"raw null", RawData("null"), 0, `sdk: the data is raw but not a JSON object ("null"): it is null`},
		{"two objects", RawData(`{"a":1} {"b":2}`), 0, `sdk: the data is raw but not a JSON object ("{\"a\":1} {\"b\":2}"): more follows the object`},
		{"long", RawData(`not json, and long enough to be cut short in the error`), 0, `sdk: the data is raw but not a JSON object ("not json, and long enough to be cut shor"…): invalid character 'o' in literal null (expecting 'u')`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			f, err := FieldsOf(tt.data)
			if tt.wantErr != "" {
				is.True(err != nil)
				is.Equal(err.Error(), tt.wantErr)
				return
			}
			is.NoErr(err)
			is.Equal(len(f), tt.want)
		})
	}
}

func TestFieldsTypedAccess(t *testing.T) {
	is := is.New(t)
	when := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	structured := Fields{
		"s": "text", "b": []byte("bytes"), "i8": int8(-3), "u64": uint64(1 << 63), "f": 2.0, "half": 0.5,
		"t": when, "ok": true, "null": nil, "obj": map[string]any{"x": "y"},
	}
	raw, err := FieldsOf(RawData(`{"s":"text","big":9007199254740993,"f":2.0,"e":1e3,"half":0.5,"t":"2024-05-06T07:08:09Z","ok":true,"null":null,"obj":{"x":"y"}}`))
	is.NoErr(err)

	s, err := structured.String("b")
	is.NoErr(err)
	is.Equal(s, "bytes")
	n, err := structured.Int("i8")
	is.NoErr(err)
	is.Equal(n, int64(-3))
	n, err = structured.Int("f")
	is.NoErr(err)
	is.Equal(n, int64(2))
	n, err = raw.Int("big")
	is.NoErr(err)
	is.Equal(n, int64(9007199254740993)) // every digit, which a float64 would lose
	n, err = raw.Int("e")
	is.NoErr(err)
	is.Equal(n, int64(1000))
	x, err := raw.Float("half")
	is.NoErr(err)
	is.Equal(x, 0.5)
	x, err = structured.Float("i8")
	is.NoErr(err)
	is.Equal(x, -3.0)
	for _, f := range []Fields{structured, raw} {
		tm, err := f.Time("t")
		is.NoErr(err)
		is.True(tm.Equal(when))
		b, err := f.Bool("ok")
		is.NoErr(err)
		is.True(b)
		obj, err := f.Fields("obj")
		is.NoErr(err)
		s, err := obj.String("x")
		is.NoErr(err)
		is.Equal(s, "y")
	}

	errs := []struct {
		err  error
		want string
	}{
		{second(structured.Int("missing")), `field "missing": missing, expected an integer`},
		{second(raw.Int("null")), `field "null": got null, expected an integer`},
		{second(raw.Int("s")), `field "s": got "text" (a string), expected an integer`},
		{second(raw.Int("half")), `field "half": got 0.5 (a number), expected an integer`},
		{second(structured.Int("u64")), `field "u64": got 9223372036854775808 (a number), expected an integer`},
		{second(raw.String("big")), `field "big": got 9007199254740993 (a number), expected a string`},
		{second(raw.Float("ok")), `field "ok": got true (a boolean), expected a number`},
		{second(raw.Bool("obj")), `field "obj": got map[x:y] (an object), expected true or false`},
		{second(raw.Time("s")), `field "s": got "text" (a string), expected a time such as "2006-01-02T15:04:05Z"`},
		{second(structured.Fields("s")), `field "s": got "text" (a string), expected an object`},
	}
	for _, tt := range errs {
		is.True(tt.err != nil)
		is.Equal(tt.err.Error(), tt.want)
		var fe *FieldError
		is.True(errors.As(tt.err, &fe))
	}
}

func second[T any](_ T, err error) error { return err }
