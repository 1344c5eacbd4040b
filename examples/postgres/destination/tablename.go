package destination

import (
	"errors"
	"fmt"
	"strings"
	"text/template"

	"github.com/connkit/connkit/sdk"
)

// collectionTemplate is the table the other postgres destination names by
// default, and the one pipelines written for it set: the record's
// opencdc.collection, which is what an empty table parameter means here.
const collectionTemplate = `{{ index .Metadata "opencdc.collection" }}`

// templateFuncs are the functions a table template may call besides
// text/template's own (index, printf, ...): the string functions of the
// sprig library that table names need, under sprig's names.
var templateFuncs = template.FuncMap{
	"lower":      strings.ToLower,
	"upper":      strings.ToUpper,
	"trim":       strings.TrimSpace,
	"trimPrefix": func(prefix, s string) string { return strings.TrimPrefix(s, prefix) },
	"trimSuffix": func(suffix, s string) string { return strings.TrimSuffix(s, suffix) },
	"replace":    func(old, new, s string) string { return strings.ReplaceAll(s, old, new) },
	"default": func(def string, s string) string {
		if s == "" {
			return def
		}
		return s
	},
}

// tableNamer returns the function that names each record's table, from
// the table parameter: the parameter itself when it is a plain name, the
// record's opencdc.collection when it is empty, and otherwise a Go
// template (text/template) executed over the record, as in
// {{ index .Metadata "opencdc.collection" }}.
func tableNamer(param string) (func(sdk.Record) (string, error), error) {
	param = strings.TrimSpace(param)
	switch {
	case param == "" || param == collectionTemplate:
		return collectionOf, nil
	case !strings.Contains(param, "{{"):
		return func(sdk.Record) (string, error) { return param, nil }, nil
	}
	tmpl, err := template.New("table").Option("missingkey=error").Funcs(templateFuncs).Parse(param)
	if err != nil {
		return nil, fmt.Errorf(`parameter "table": %q is neither a table name nor a Go template: %w`, param, err)
	}
	return func(rec sdk.Record) (string, error) {
		var b strings.Builder
		if err := tmpl.Execute(&b, rec); err != nil {
			return "", fmt.Errorf("table template %q: %w", param, err)
		}
		name := strings.TrimSpace(b.String())
		switch {
		case name == "":
			return "", fmt.Errorf("table template %q gives no table for this record", param)
		case strings.Contains(name, "{{") || strings.Contains(name, "}}"):
			return "", fmt.Errorf("table template %q gives %q, which still holds template braces", param, name)
		}
		return name, nil
	}, nil
}

// collectionOf names a record's table by its opencdc.collection metadata.
func collectionOf(rec sdk.Record) (string, error) {
	c, err := rec.Metadata.GetCollection()
	if err != nil || c == "" {
		return "", errors.New("no table: set the table parameter or the record's opencdc.collection metadata")
	}
	return c, nil
}
