package main

import (
	"flag"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeFlags holds README's section on the reference pipeline to the
// command's flags: it names every one, and with its default where the
// default does not depend on the machine (-conduit and -plugin, which make
// pipeline sets, do).
func TestReadmeFlags(t *testing.T) {
	readme, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)\n## The reference pipeline\n(.*?)\n## ").FindSubmatch(readme)
	if m == nil {
		t.Fatal("README has no section on the reference pipeline")
	}
	section := strings.Join(strings.Fields(string(m[1])), " ") // as rendered: line breaks are spaces
	fs := flag.NewFlagSet("pipeline", flag.ContinueOnError)
	flags(fs, &config{})
	fs.VisitAll(func(f *flag.Flag) {
		want := "`-" + f.Name + "`"
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); f.DefValue != "" && f.Name != "conduit" && f.Name != "plugin" && !(ok && b.IsBoolFlag()) {
			want = "`-" + f.Name + " " + f.DefValue + "`"
		}
		if !strings.Contains(section, want) {
			t.Errorf("README's section on the reference pipeline does not say %s", want)
		}
	})
}

// The flags that the command cannot run with are refused, naming the
// flag.
func TestCheck(t *testing.T) {
	for _, tt := range []struct {
		cfg  config
		want string // in the error; empty: none
	}{
		{config{records: 1}, ""},
		{config{records: 0}, "-records must be at least 1"},
		{config{records: 1, metrics: "127.0.0.1:9464"}, ""},
		{config{records: 1, metrics: "9464"}, `-metrics "9464": expected a host:port`},
		{config{records: 1, metrics: "127.0.0.1:0"}, `-metrics "127.0.0.1:0": expected a port other than 0`},
	} {
		err := tt.cfg.check()
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%+v: %v, want %q", tt.cfg, err, tt.want)
		}
	}
}
