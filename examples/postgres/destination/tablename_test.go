package destination

import (
	"strings"
	"testing"

	"github.com/connkit/connkit/internal/pgtest"
	"github.com/connkit/connkit/sdk"
	"github.com/matryer/is"
)

func TestTableNamer(t *testing.T) {
	rec := sdk.Record{Metadata: sdk.Metadata{sdk.MetadataCollection: "Orders", "tenant": "acme"}, Key: sdk.StructuredData{"id": 1}}
	for _, c := range []struct{ param, want, err string }{
		{param: "", want: "Orders"},
		{param: `{{ index .Metadata "opencdc.collection" }}`, want: "Orders"},
		{param: "plain", want: "plain"},
		{param: `{{ index .Metadata "tenant" }}.{{ index .Metadata "opencdc.collection" | lower }}`, want: "acme.orders"},
		{param: `{{ .Metadata.tenant | upper | replace "A" "a" }}_events`, want: "aCME_events"},
		{param: `{{ index .Metadata "missing" }}`, err: `table template "{{ index .Metadata \"missing\" }}" gives no table for this record`},
		{param: `{{ .Metadata.missing }}`, err: `map has no entry for key "missing"`},
		{param: `{{ "{{x}}" }}`, err: `gives "{{x}}", which still holds template braces`},
	} {
		name, err := tableNamer(c.param)
		if err != nil {
			t.Fatalf("%q: %v", c.param, err)
		}
		got, err := name(rec)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: got %q, %v; want an error with %q", c.param, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: got %q, %v; want %q", c.param, got, err, c.want)
		}
	}
	_, err := tableNamer(`{{ snakecase .Metadata.tenant }}`)
	if err == nil || !strings.HasPrefix(err.Error(), `parameter "table": "{{ snakecase .Metadata.tenant }}" is neither a table name nor a Go template`) {
		t.Errorf("unknown function: got %v", err)
	}
}

// A pipeline file written for the other postgres destination names the
// table with its default template; records of two collections go to
// their own tables, and a record the template gives no table is that
// record's fault alone.
func TestTableTemplate(t *testing.T) {
	is := is.New(t)
	conn, d := setup(t, `CREATE TABLE a (id int PRIMARY KEY, v text); CREATE TABLE b (id int PRIMARY KEY, v text)`,
		map[string]string{"table": `{{ index .Metadata "opencdc.collection" }}`, "auto.create": "false"})
	in := func(pos, table string, id int) sdk.Record {
		r := rec(pos, sdk.OperationCreate, sdk.StructuredData{"id": id}, sdk.StructuredData{"v": pos})
		if table != "" {
			r.Metadata.SetCollection(table)
		}
		return r
	}
	out, err := driveWrite(t.Context(), d, []sdk.Record{in("1", "a", 1), in("2", "b", 1), in("3", "", 2), in("4", "a", 2)}, 4)
	is.NoErr(err)
	is.Equal(len(out.Faults), 1)
	is.True(strings.Contains(out.Faults[2].Error(), "no table"))
	is.Equal(pgtest.Rows(t, conn, `SELECT id, v FROM a ORDER BY id`), []string{"1|1", "2|4"})
	is.Equal(pgtest.Rows(t, conn, `SELECT id, v FROM b ORDER BY id`), []string{"1|2"})
}
