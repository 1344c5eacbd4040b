// Package metricstest reads what a connector serves at /metrics, for
// tests and the pipeline command: each sample by its name and labels,
// whatever order the labels were served in.
package metricstest

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Samples are the samples of one scrape, by [Key].
type Samples map[string]float64

// Key names a sample by its name and its labels, each given as
// name=value, in any order.
func Key(name string, labels ...string) string {
	labels = slices.Sorted(slices.Values(labels))
	return name + "{" + strings.Join(labels, ",") + "}"
}

// Get returns the sample name with labels, and whether there is one.
func (s Samples) Get(name string, labels ...string) (float64, bool) {
	v, ok := s[Key(name, labels...)]
	return v, ok
}

// Sum returns the sum of the samples name whose labels include labels,
// and how many there are.
func (s Samples) Sum(name string, labels ...string) (sum float64, n int) {
	for k, v := range s {
		got, ok := strings.CutPrefix(k, name+"{")
		if !ok {
			continue
		}
		have := strings.Split(strings.TrimSuffix(got, "}"), ",")
		if !containsAll(have, labels) {
			continue
		}
		sum += v
		n++
	}
	return sum, n
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// Scrape gets http://address/metrics and reads it.
func Scrape(address string) (Samples, error) {
	client := http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get("http://" + address + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: %s", address, resp.Status)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return Parse(string(b))
}

// Parse reads a scrape in the Prometheus text format. Label values must
// not hold commas or escaped quotes, which these tests' do not.
func Parse(text string) (Samples, error) {
	out := Samples{}
	for _, line := range strings.Split(text, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cut := strings.LastIndexByte(line, ' ')
		if cut < 0 {
			return nil, fmt.Errorf("scrape line %q has no value", line)
		}
		v, err := strconv.ParseFloat(line[cut+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("scrape line %q: %v", line, err)
		}
		name, labels, _ := strings.Cut(line[:cut], "{")
		var pairs []string
		for _, p := range strings.Split(strings.TrimSuffix(labels, "}"), ",") {
			if k, v, ok := strings.Cut(p, "="); ok {
				pairs = append(pairs, k+"="+strings.Trim(v, `"`))
			}
		}
		out[Key(name, pairs...)] = v
	}
	return out, nil
}
