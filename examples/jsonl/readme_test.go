package jsonl_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeShowsThisTest keeps the README's "Testing your connector"
// example the same as TestDestination, which runs.
func TestReadmeShowsThisTest(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("jsonl_test.go")
	if err != nil {
		t.Fatal(err)
	}
	fn := regexp.MustCompile(`(?s)\nfunc TestDestination\(.*?\n}\n`).Find(src)
	if fn == nil {
		t.Fatal("jsonl_test.go has no TestDestination")
	}
	if !strings.Contains(string(readme), strings.TrimPrefix(string(fn), "\n")) {
		t.Errorf("README.md does not show TestDestination as jsonl_test.go has it:\n%s", fn)
	}
}
