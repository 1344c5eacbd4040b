package pg

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
)

// plainIdent matches the identifiers SQL needs no quotes for.
var plainIdent = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// SQLName is an identifier as SQL needs it written: quoted only when it
// has to be, for messages people may copy into psql.
func SQLName(parts ...string) string {
	for i, p := range parts {
		if !plainIdent.MatchString(p) {
			parts[i] = pgx.Identifier{p}.Sanitize()
		}
	}
	return strings.Join(parts, ".")
}

// SplitName splits a table name at dots outside double quotes.
func SplitName(name string) ([]string, error) {
	var parts []string
	var cur strings.Builder
	quoted := false
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case c == '"' && quoted && i+1 < len(name) && name[i+1] == '"':
			cur.WriteByte('"')
			i++
		case c == '"':
			quoted = !quoted
		case c == '.' && !quoted:
			parts = append(parts, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	parts = append(parts, cur.String())
	if quoted || len(parts) > 2 || parts[0] == "" || parts[len(parts)-1] == "" {
		return nil, fmt.Errorf("table name %q: expected table or schema.table", name)
	}
	return parts, nil
}

// Quote is name as a quoted SQL identifier.
func Quote(name string) string { return pgx.Identifier{name}.Sanitize() }
