package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
)

// intList is a flag of comma-separated integers, each at least min;
// parsing the flag checks them.
type intList struct {
	values []int
	min    int
}

// intsFlag defines the flag name on fs, comma-separated integers of at
// least min, value by default, and returns where its integers will be.
func intsFlag(fs *flag.FlagSet, name, value string, min int, usage string) *[]int {
	l := &intList{min: min}
	if err := l.Set(value); err != nil {
		panic(fmt.Sprintf("-%s: default %v", name, err))
	}
	fs.Var(l, name, usage)
	return &l.values
}

func (l *intList) String() string {
	if l == nil {
		return ""
	}
	s := make([]string, len(l.values))
	for i, n := range l.values {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

// Set replaces the list with the integers of s.
func (l *intList) Set(s string) error {
	var values []int
	for e := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(e))
		if err != nil || n < l.min {
			return fmt.Errorf("%q is not an integer of at least %d", e, l.min)
		}
		values = append(values, n)
	}
	l.values = values
	return nil
}
