package sdk

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// sdkParameterMention matches what reads as the name of an sdk.*
// parameter, or of a group of them (sdk.batch, sdk.retry.*), in a text:
// Go names such as sdk.Record start with a capital letter.
var sdkParameterMention = regexp.MustCompile(`\bsdk\.[a-z][A-Za-z0-9]*(\.[A-Za-z0-9]+)*(\.\*)?`)

// TestDocsNameOnlySDKParameters holds the repository's docs to the SDK's
// parameters: every sdk.* name in a Markdown file, a template of
// connkit new, or a comment of a Go file that is not a test is a
// parameter of a source or a destination, or a group of them (sdk.batch,
// sdk.schema.extract.*). A doc that names a parameter no connector has
// sends a pipeline author to a setting Configure refuses. Processors
// have parameters of their own (sdk.schema.decode.*); the Go code that
// sets them does so in strings, not comments.
func TestDocsNameOnlySDKParameters(t *testing.T) {
	params := append(sdkParameterNames(sourceSettings{}), sdkParameterNames(destinationSettings{})...)
	known := func(name string) bool {
		if group, ok := strings.CutSuffix(name, ".*"); ok {
			name = group
		}
		return slices.ContainsFunc(params, func(p string) bool { return p == name || strings.HasPrefix(p, name+".") })
	}
	checked := 0
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && d.Name() != ".." {
				return filepath.SkipDir
			}
			return nil
		}
		texts, err := docTexts(path)
		if err != nil {
			return err
		}
		for _, text := range texts {
			checked++
			for _, at := range sdkParameterMention.FindAllStringIndex(text.text, -1) {
				if name := text.text[at[0]:at[1]]; !known(name) {
					line := text.line + strings.Count(text.text[:at[0]], "\n")
					t.Errorf("%s:%d names %s, which is no sdk.* parameter of a source or a destination", path, line, name)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatal("no docs found to check")
	}
}

// docText is a piece of documentation and the line it starts on.
type docText struct {
	text string
	line int
}

// docTexts returns the documentation in the file at path: the whole of a
// Markdown file or a template, the comments of a Go file that is not a
// test, and nothing of any other file.
func docTexts(path string) ([]docText, error) {
	switch {
	case strings.HasSuffix(path, ".md"), strings.HasSuffix(path, ".tmpl"):
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		return []docText{{string(b), 1}}, nil
	case strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go"):
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		var texts []docText
		for _, group := range f.Comments {
			texts = append(texts, docText{group.Text(), fset.Position(group.Pos()).Line})
		}
		return texts, nil
	}
	return nil, nil
}
