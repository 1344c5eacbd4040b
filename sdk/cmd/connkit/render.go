package main

import (
	"bytes"
	"embed"
	"fmt"
	"go/format"
	"io/fs"
	"path"
	"strings"
	"text/template"
)

// The module's files, each named by its path with NAME for the connector's
// name. A file whose name ends in .tmpl is a text/template, which the
// module gets without the .tmpl; any other file is copied as it is, such
// as the GitHub workflows, whose ${{ }} expressions are GitHub's.
//
//go:embed all:template
var templates embed.FS

// render returns the files of a new module by path, the Go files
// formatted. The source's and the destination's files are left out when
// the module has no such role.
func render(opts options) (map[string][]byte, error) {
	set := template.New("").Funcs(template.FuncMap{"base": path.Base})
	var names []string
	files := map[string][]byte{}
	err := fs.WalkDir(templates, "template", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		text, err := fs.ReadFile(templates, p)
		if err != nil {
			return err
		}
		name, isTemplate := strings.CutSuffix(strings.TrimPrefix(p, "template/"), ".tmpl")
		if !isTemplate {
			files[strings.ReplaceAll(name, "NAME", opts.Name)] = text
			return nil
		}
		names = append(names, name)
		_, err = set.New(name).Parse(string(text))
		return err
	})
	if err != nil {
		return nil, err
	}
	for _, name := range names {
		if name == "source.go" && !opts.Source || name == "destination.go" && !opts.Destination {
			continue
		}
		var buf bytes.Buffer
		if err := set.ExecuteTemplate(&buf, name, opts); err != nil {
			return nil, err
		}
		content := buf.Bytes()
		if path.Ext(name) == ".go" {
			if content, err = format.Source(content); err != nil {
				return nil, fmt.Errorf("template %s: %w\n%s", name, err, buf.Bytes())
			}
		}
		files[strings.ReplaceAll(name, "NAME", opts.Name)] = content
	}
	return files, nil
}
