package generator

import (
	"strconv"
	"time"

	"github.com/connkit/connkit/sdk/config"
)

// Config is the generator's configuration.
type Config struct {
	Format      Format   `param:"format"`
	RecordCount int64    `param:"recordCount" default:"0" validate:"gt=-1" desc:"Number of records to generate; 0 means no limit."`
	Rate        float64  `param:"rate" default:"0" desc:"Records per second to generate, from 0.000001 (one every 11.6 days) to 1000000000; 0 means as fast as possible."`
	Operations  []string `param:"operations" default:"create" desc:"Comma-separated operations to generate, each record's picked at random: create, update, delete, snapshot."`
	Burst       Burst    `param:"burst"`
	// Collections, when set, replace format and operations: records take
	// turns among the collections, in name order.
	Collections map[string]Collection `param:"collections.*"`
}

// Collection is one named kind of record.
type Collection struct {
	Format     Format   `param:"format"`
	Operations []string `param:"operations" default:"create" desc:"Comma-separated operations to generate for this collection: create, update, delete, snapshot."`
}

// Burst alternates generating and pausing.
type Burst struct {
	SleepTime    time.Duration `param:"sleepTime" default:"0" validate:"gt=-1" desc:"How long the generator pauses between bursts; 0 means no bursts."`
	GenerateTime time.Duration `param:"generateTime" default:"1s" validate:"gt=0" desc:"How long each burst generates records; used only with burst.sleepTime."`
}

// Format says what each record's payload looks like.
type Format struct {
	Type    string            `param:"type" default:"raw" validate:"inclusion=raw|structured|file" desc:"Payload format: raw (the fields as a JSON object), structured (the fields as structured data) or file (the contents of format.options.path)."`
	Options map[string]string `param:"options.*" desc:"For raw and structured: a field name and its type, one of int, string, time, bool, duration (e.g. format.options.id: int). For file: path, the file whose contents are the payload."`
}

// The rates that make sense: at more than maxRate records per second a
// record would be due every nanosecond or less, and below minRate the wait
// for one outgrows what the pacing can count; both used to behave as "as
// fast as possible" without a word.
const (
	minRate = 1e-6
	maxRate = 1e9
)

// Validate checks what the tags cannot: that rate is 0 or a rate the
// generator can keep.
func (c Config) Validate() error {
	if c.Rate != 0 && !(c.Rate >= minRate && c.Rate <= maxRate) {
		return &config.ParameterError{
			Name:     "rate",
			Value:    strconv.FormatFloat(c.Rate, 'f', -1, 64),
			Expected: "0 (as fast as possible) or from 0.000001 to 1000000000 records per second",
		}
	}
	return nil
}
