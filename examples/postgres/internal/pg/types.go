package pg

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// TypesKey is the metadata in which the source describes the user types
// (enums, domains, composite types) that a record's columns use, so that
// a destination lacking them can create them before the table or column
// that needs them. It is present only when the columns use such a type.
// Its value is a JSON array of [Type]s, each after the types it is made
// of (a domain after its base type, a composite type after its fields'),
// e.g.
//
//	[{"name":"stat","kind":"enum","labels":["new","held","paid"]},
//	 {"name":"pct","kind":"domain","base":"numeric(5,2)","notNull":true,"checks":["CHECK (((VALUE >= (0)::numeric) AND (VALUE <= (100)::numeric)))"]},
//	 {"name":"addr","kind":"composite","fields":[{"name":"street","type":"text"},{"name":"status","type":"stat"}]}]
//
// A column of an array of a user type (stat[]) brings its element type.
const TypesKey = "postgres.types"

// The kinds of [Type].
const (
	KindEnum      = "enum"
	KindDomain    = "domain"
	KindComposite = "composite"
)

// Type is a user type as the source database defines it.
type Type struct {
	// Name is the type's name as format_type spells it: as the columns
	// of postgres.columns name it, schema-qualified when its schema is
	// not on the search path.
	Name string `json:"name"`
	Kind string `json:"kind"` // enum, domain or composite
	// Labels are an enum's labels, in their order.
	Labels []string `json:"labels,omitempty"`
	// Base is a domain's underlying type, with its modifier.
	Base string `json:"base,omitempty"`
	// NotNull is a domain's NOT NULL.
	NotNull bool `json:"notNull,omitempty"`
	// Checks are a domain's CHECK constraints, as pg_get_constraintdef
	// writes them: CHECK ((VALUE > 0)).
	Checks []string `json:"checks,omitempty"`
	// Default is a domain's default expression, when it is one the
	// source carries (see [Column.Default]).
	Default string `json:"default,omitempty"`
	// Fields are a composite type's attributes, in order.
	Fields []Field `json:"fields,omitempty"`
}

// Field is an attribute of a composite type.
type Field struct {
	Name string `json:"name"`
	Type string `json:"type"` // as format_type spells it
}

// EncodeTypes is the metadata value describing types.
func EncodeTypes(types []Type) string { return encode(types) }

// encode is v as JSON, with <, > and & as they are: expressions hold them
// (CHECK ((VALUE > 0))), and escaped they would be longer and harder to read.
func encode(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil { // strings, numbers and booleans only
		panic(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// DecodeTypes reads a metadata value EncodeTypes made, checking that
// every type has a name and a known kind with what that kind needs: an
// enum its labels, a domain its base type, a composite type fields with
// names and types.
func DecodeTypes(s string) ([]Type, error) {
	var types []Type
	if err := json.Unmarshal([]byte(s), &types); err != nil {
		return nil, fmt.Errorf("metadata %s: %w", TypesKey, err)
	}
	for i, t := range types {
		if t.Name == "" {
			return nil, fmt.Errorf("metadata %s: type %d has no name", TypesKey, i+1)
		}
		var ok bool
		switch t.Kind {
		case KindEnum:
			ok = true // an enum may have no labels yet
		case KindDomain:
			ok = t.Base != ""
		case KindComposite:
			ok = !slices.ContainsFunc(t.Fields, func(f Field) bool { return f.Name == "" || f.Type == "" })
		default:
			return nil, fmt.Errorf("metadata %s: type %s has kind %q, expected enum, domain or composite", TypesKey, t.Name, t.Kind)
		}
		if !ok {
			return nil, fmt.Errorf("metadata %s: %s %s lacks its base type or a field's name or type", TypesKey, t.Kind, t.Name)
		}
	}
	return types, nil
}
