package format

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/template"

	"github.com/conduitio/conduit-commons/opencdc"
)

// templateFuncs are the functions templates may call: the few of sprig's
// that record templates use, with sprig's names and behaviour.
var templateFuncs = template.FuncMap{
	"toJson": func(v any) string {
		b, _ := json.Marshal(v) // sprig's toJson writes nothing for what fails
		return string(b)
	},
	"toPrettyJson": func(v any) string {
		b, _ := json.MarshalIndent(v, "", "  ")
		return string(b)
	},
	"toRawJson": func(v any) (string, error) {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(&v); err != nil {
			return "", err
		}
		return strings.TrimSuffix(b.String(), "\n"), nil
	},
	"toString": func(v any) string {
		switch v := v.(type) {
		case string:
			return v
		case []byte:
			return string(v)
		case error:
			return v.Error()
		case fmt.Stringer:
			return v.String()
		}
		return fmt.Sprintf("%v", v)
	},
	"typeOf": func(v any) string { return fmt.Sprintf("%T", v) },
	"typeIs": func(target string, v any) bool { return target == fmt.Sprintf("%T", v) },
	"b64enc": func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) },
	"b64dec": func(s string) string {
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return err.Error() // as sprig does
		}
		return string(b)
	},
}

// templateFuncNames lists templateFuncs for error messages.
const templateFuncNames = "toJson, toPrettyJson, toRawJson, toString, typeOf, typeIs, b64enc, b64dec"

// templateFormat writes what a Go template makes of a record.
type templateFormat struct {
	t *template.Template
}

func newTemplate(text string) (templateFormat, error) {
	if strings.TrimSpace(text) == "" {
		return templateFormat{}, errors.New(ParamOptions + `: format template needs a Go template, e.g. {{ toJson . }}`)
	}
	t, err := template.New(Template).Funcs(templateFuncs).Option("missingkey=error").Parse(text)
	if err != nil {
		return templateFormat{}, fmt.Errorf("%s: the template does not parse (it may call, besides Go's builtins, %s): %w",
			ParamOptions, templateFuncNames, err)
	}
	return templateFormat{t: t}, nil
}

func (f templateFormat) Serialize(r opencdc.Record) ([]byte, error) {
	var b bytes.Buffer
	if err := f.t.Execute(&b, r); err != nil {
		return nil, fmt.Errorf("%s: %w", Template, err)
	}
	return b.Bytes(), nil
}
