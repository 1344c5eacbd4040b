package jsonl_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/connkit/connkit/examples/jsonl"
	"github.com/connkit/connkit/sdk"
	"github.com/matryer/is"
)

// A string that is not valid UTF-8 is not written with U+FFFD in place of
// its bytes: its record is refused alone, naming the field, and the
// records after it are written by the next Write. Raw data, which lines
// carry as base64, keeps any bytes; a valid U+FFFD, or the text \ufffd,
// is written as it is.
func TestInvalidUTF8(t *testing.T) {
	is := is.New(t)
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "out.jsonl")
	d, err := jsonl.Connector.Destination.New(map[string]string{"path": path})
	is.NoErr(err)
	is.NoErr(d.Open(ctx))
	defer d.Teardown(ctx)

	r := func(pos string, after sdk.Data) sdk.Record {
		return sdk.Record{Position: sdk.Position(pos), Operation: sdk.OperationCreate, Metadata: sdk.Metadata{}, Payload: sdk.Change{After: after}}
	}
	badMeta := r("m", sdk.StructuredData{})
	badMeta.Metadata["note"] = "\xff"
	badKey := r("k", nil)
	badKey.Key = sdk.StructuredData{"\xfe": 1}
	records := []sdk.Record{
		r("ok1", sdk.StructuredData{"s": "\ufffd and \\ufffd"}),
		r("value", sdk.StructuredData{"user": map[string]any{"name": "a\xff\xfeb"}}),
		r("ok2", sdk.RawData("\xff\xfe")),
		r("list", sdk.StructuredData{"tags": []any{"x", "\xc3"}}),
		badMeta,
		badKey,
		r("ok3", sdk.StructuredData{"s": "café"}),
	}
	want := map[string]string{
		"value": `field "payload.after.user.name": its value`,
		"list":  `field "payload.after.tags[1]": its value`,
		"m":     `field "metadata.note": its value`,
		"k":     `field "key.\xfe": its name`,
	}
	for i := 0; i < len(records); {
		n, err := d.Write(ctx, records[i:])
		i += n
		if err == nil {
			continue
		}
		pos := string(records[i].Position)
		var text *sdk.InvalidUTF8Error
		is.True(sdk.IsRecordFault(err))
		is.True(errors.As(err, &text))
		if !strings.Contains(err.Error(), fmt.Sprintf("record %q: %s", pos, want[pos])) {
			t.Errorf("got %q, want record %q: %s", err, pos, want[pos])
		}
		delete(want, pos)
		i++
	}
	is.Equal(len(want), 0) // every bad record refused

	got, err := jsonl.ReadFile(path)
	is.NoErr(err)
	is.Equal(len(got), 3)
	is.Equal(got[0].Payload.After, sdk.StructuredData{"s": "\ufffd and \\ufffd"})
	is.Equal(got[1].Payload.After, sdk.RawData("\xff\xfe"))
	is.Equal(string(got[2].Position), "ok3")
}
