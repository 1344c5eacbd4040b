package destination

import (
	"fmt"
	"strings"
	"testing"

	"github.com/connkit/connkit/internal/pgtest"
	"github.com/connkit/connkit/sdk"
	"github.com/matryer/is"
)

// Text that is not valid UTF-8 is never written changed: into bytea it
// goes byte for byte; anywhere else the record is refused, alone, with
// its position and its field, and the records around it are written.
func TestInvalidUTF8(t *testing.T) {
	is := is.New(t)
	conn, d := setup(t, `CREATE TABLE t (id int PRIMARY KEY, name text, v varchar(10), doc jsonb, j json, bin bytea)`,
		map[string]string{"table": "t"})
	const bad = "a\xff\xfeb"
	refused := []struct {
		after sdk.Data
		want  string
	}{
		{sdk.RawData("{\"name\":\"" + bad + "\"}"), `field "payload.after.name": its value is not valid UTF-8 text`},
		{sdk.RawData("{\"doc\":{\"x\":[1,\"" + bad + "\"]}}"), `field "payload.after.doc.x[1]": its value is not valid UTF-8 text`},
		{sdk.RawData("{\"doc\":{\"" + bad + "\":1}}"), `field "payload.after.doc.a\xff\xfeb": its name is not valid UTF-8 text`},
		{sdk.RawData("{\"bin\":\"" + bad + "\"}"), `field "payload.after.bin": its value is not valid UTF-8 text`}, // raw JSON is text, even for bytea
		{sdk.StructuredData{"name": bad}, `table t: column "name" (text): not valid UTF-8 text`},
		{sdk.StructuredData{"v": bad}, `table t: column "v" (character varying(10)): not valid UTF-8 text`},
		{sdk.StructuredData{"doc": bad}, `table t: column "doc" (jsonb): not valid UTF-8 text`},
		{sdk.StructuredData{"doc": map[string]any{"x": []any{"ok", bad}}}, `table t: column "doc" (jsonb): not valid UTF-8 text (refused: replacing the invalid bytes would change it): "a\xff\xfeb"`},
		{sdk.StructuredData{"j": map[string]any{bad: 1}}, `table t: column "j" (json): not valid UTF-8 text (refused: replacing the invalid bytes would change it): the name "a\xff\xfeb"`},
	}
	var records []sdk.Record
	for i, r := range refused {
		good := fmt.Sprint(2 * i)
		records = append(records,
			rec(good, sdk.OperationCreate, sdk.StructuredData{"id": 2 * i}, sdk.StructuredData{"name": "ok é", "bin": bad}),
			rec(fmt.Sprint(2*i+1), sdk.OperationCreate, sdk.StructuredData{"id": 2*i + 1}, r.after))
	}
	for _, size := range []int{1, len(records)} {
		_, err := conn.Exec(t.Context(), `TRUNCATE t`)
		is.NoErr(err)
		out, err := driveWrite(t.Context(), d, records, size)
		is.NoErr(err)
		is.Equal(len(out.Faults), len(refused))
		for i, r := range refused {
			err := out.Faults[2*i+1]
			prefix := fmt.Sprintf(`record at position "%d": `, 2*i+1)
			if !strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), r.want) {
				t.Errorf("record %d: got %q, want %q and %q", 2*i+1, err, prefix, r.want)
			}
		}
		got := pgtest.Rows(t, conn, `SELECT count(*), bool_and(name = 'ok é'), bool_and(bin = '\x61fffe62'::bytea) FROM t`)
		is.Equal(got, []string{fmt.Sprintf("%d|true|true", len(refused))}) // every good record, its bytea byte for byte
	}
}
