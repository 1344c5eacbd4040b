package main

import (
	"flag"
	"io"
	"slices"
	"testing"
)

// A list flag holds its default until parsed, then the integers given; a
// list with an integer below the least, or with anything else, is refused.
func TestIntsFlag(t *testing.T) {
	tests := []struct {
		args []string
		min  int
		want []int // nil: refused
	}{
		{nil, 1, []int{1, 10}},
		{[]string{"-sizes", "1, 20,300"}, 1, []int{1, 20, 300}},
		{[]string{"-sizes", "0,5"}, 0, []int{0, 5}},
		{[]string{"-sizes", "0,5"}, 1, nil},
		{[]string{"-sizes", "-1"}, 0, nil},
		{[]string{"-sizes", "1,,2"}, 0, nil},
		{[]string{"-sizes", "ten"}, 0, nil},
	}
	for _, tt := range tests {
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		sizes := intsFlag(fs, "sizes", "1,10", tt.min, "")
		err := fs.Parse(tt.args)
		switch {
		case tt.want == nil && err == nil:
			t.Errorf("%q with min %d: got %v, want an error", tt.args, tt.min, *sizes)
		case tt.want != nil && (err != nil || !slices.Equal(*sizes, tt.want)):
			t.Errorf("%q with min %d: got %v, %v, want %v", tt.args, tt.min, *sizes, err, tt.want)
		}
	}
}
