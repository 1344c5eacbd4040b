package config

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

type nested struct {
	Type    string            `param:"type" default:"raw" validate:"inclusion=raw|structured"`
	Options map[string]string `param:"options.*" validate:"exclusion=bad"`
}

type embedded struct {
	Verbose bool `param:"verbose"`
}

type testConfig struct {
	embedded
	URL     string        `param:"url" validate:"required" desc:"where to connect"`
	Count   int           `param:"count" default:"10" validate:"gt=0,lt=1000"`
	Small   int8          `param:"small"`
	Size    uint32        `param:"size"`
	Rate    float64       `param:"rate" default:"1.5"`
	Delay   time.Duration `param:"delay" default:"1s"`
	Tables  []string      `param:"tables"`
	Mode    string        `param:"mode" validate:"regex=[a-z]+-[0-9]+"`
	Format  nested        `param:"format"`
	ignored string
}

func TestParseConfig(t *testing.T) {
	tests := []struct {
		name    string
		raw     map[string]string
		want    func(*testConfig) // mutates the expected config from the defaults
		wantErr []string          // substrings of the error, in any order
	}{{
		name: "defaults",
		raw:  map[string]string{"url": "pg://x"},
		want: func(c *testConfig) {},
	}, {
		name: "every type",
		raw: map[string]string{
			"url": "pg://x", "verbose": "true", "count": "999", "small": "-128", "size": "4000000000",
			"rate": "0.25", "delay": "250ms", "tables": "a, b,,c", "mode": "abc-12",
			"format.type": "structured", "format.options.id": "int", "format.options.a.b": "string",
		},
		want: func(c *testConfig) {
			c.Verbose, c.Count, c.Small, c.Size, c.Rate, c.Delay = true, 999, -128, 4000000000, 0.25, 250*time.Millisecond
			c.Tables, c.Mode = []string{"a", "b", "c"}, "abc-12"
			c.Format.Type = "structured"
			c.Format.Options = map[string]string{"id": "int", "a.b": "string"}
		},
	}, {
		name: "spaces around keys and values, empty value means default",
		raw:  map[string]string{" url ": " pg://x ", "count": ""},
		want: func(c *testConfig) {},
	}, {
		name:    "missing required",
		raw:     map[string]string{},
		wantErr: []string{`parameter "url": is required but missing`},
	}, {
		name:    "unknown with suggestion",
		raw:     map[string]string{"url": "x", "cuont": "3"},
		wantErr: []string{`parameter "cuont": is not a known parameter (did you mean "count"?)`},
	}, {
		name:    "unknown with wildcard suggestion",
		raw:     map[string]string{"url": "x", "format.option.id": "int"},
		wantErr: []string{`parameter "format.option.id": is not a known parameter (did you mean "format.options.<name>"?)`},
	}, {
		name:    "unknown far from everything",
		raw:     map[string]string{"url": "x", "zzzzzzzzzzzz": "1"},
		wantErr: []string{`parameter "zzzzzzzzzzzz": is not a known parameter`},
	}, {
		name: "wrong types",
		raw:  map[string]string{"url": "x", "count": "ten", "rate": "fast", "verbose": "yes please", "delay": "5"},
		wantErr: []string{
			`parameter "count": got "ten", expected an integer`,
			`parameter "rate": got "fast", expected a number`,
			`parameter "verbose": got "yes please", expected true or false`,
			`parameter "delay": got "5", expected a duration`,
		},
	}, {
		name: "out of range",
		raw:  map[string]string{"url": "x", "count": "0", "small": "300", "size": "-1"},
		wantErr: []string{
			`parameter "count": got "0", expected between 1 and 999`,
			`parameter "small": got "300", expected between -128 and 127`,
			`parameter "size": got "-1", expected between 0 and 4294967295`,
		},
	}, {
		name:    "upper bound",
		raw:     map[string]string{"url": "x", "count": "1000"},
		wantErr: []string{`parameter "count": got "1000", expected between 1 and 999`},
	}, {
		name: "inclusion, exclusion and regex",
		raw:  map[string]string{"url": "x", "format.type": "xml", "format.options.f": "bad", "mode": "abc-"},
		wantErr: []string{
			`parameter "format.type": got "xml", expected one of raw, structured`,
			`parameter "format.options.f": got "bad", expected none of bad`,
			`parameter "mode": got "abc-", expected a value matching [a-z]+-[0-9]+`,
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			var got testConfig
			err := Parse(tt.raw, &got)
			if tt.wantErr != nil {
				is.True(err != nil)
				for _, want := range tt.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not contain %q", err, want)
					}
				}
				var pe *ParameterError
				is.True(errors.As(err, &pe))                                                 // every error is a *ParameterError
				is.Equal(len(err.(interface{ Unwrap() []error }).Unwrap()), len(tt.wantErr)) // no other errors
				is.True(!strings.Contains(err.Error(), "\n"))                                // one line
				return
			}
			is.NoErr(err)
			want := testConfig{URL: "pg://x", Count: 10, Rate: 1.5, Delay: time.Second,
				Format: nested{Type: "raw", Options: map[string]string{}}}
			tt.want(&want)
			is.Equal(got, want)
		})
	}
}

func TestParametersDescribeTheSpec(t *testing.T) {
	is := is.New(t)
	params, err := Parameters(testConfig{})
	is.NoErr(err)
	is.Equal(names(params), []string{"count", "delay", "format.options.*", "format.type", "mode", "rate", "size", "small", "tables", "url", "verbose"})
	url := params[9]
	is.Equal(url.Description, "where to connect")
	is.True(url.Required)
	count := params[0]
	is.Equal(count.Type, TypeInt)
	is.Equal(*count.GreaterThan, 0.0)
	is.Equal(*count.LessThan, 1000.0)
	is.Equal(params[1].Type, TypeDuration)
}

func TestParametersRejectMalformedConfigs(t *testing.T) {
	tests := []struct {
		name   string
		config any
		want   string
	}{
		{"not a struct", 42, "config must be a struct"},
		{"unsupported type", struct {
			C chan int `param:"c"`
		}{}, "unsupported type"},
		{"map without wildcard", struct {
			M map[string]string `param:"m"`
		}{}, "ending in .*"},
		{"duplicate", struct {
			A string `param:"a"`
			B string `param:"a"`
		}{}, `parameter "a" is declared twice`},
		{"default fails validation", struct {
			A int `param:"a" default:"0" validate:"gt=0"`
		}{}, "default fails its own validation"},
		{"unknown rule", struct {
			A int `param:"a" validate:"positive"`
		}{}, `unknown validation "positive"`},
		{"bad regex", struct {
			A string `param:"a" validate:"regex=("`
		}{}, "regex"},
		{"unexported", struct {
			a string `param:"a"`
		}{}, "not exported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parameters(tt.config)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestParseNeedsAPointer(t *testing.T) {
	is := is.New(t)
	is.True(Parse(nil, testConfig{}) != nil)
	is.True(Parse(nil, (*testConfig)(nil)) != nil)
}

// FuzzParse checks that any raw configuration either parses into values
// that pass the declared validations or fails with parameter errors, and
// never panics.
func FuzzParse(f *testing.F) {
	f.Add("url", "pg://x", "count", "5", "format.options.a", "int")
	f.Add("url", "", "small", "999", "size", "-3")
	f.Add("curl", "x", "delay", "1h", "tables", ",,,")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2, k3, v3 string) {
		raw := map[string]string{k1: v1, k2: v2, k3: v3}
		var cfg testConfig
		err := Parse(raw, &cfg)
		if err != nil {
			for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
				var pe *ParameterError
				if !errors.As(e, &pe) {
					t.Fatalf("error %v is not a *ParameterError", e)
				}
			}
			return
		}
		if cfg.URL == "" || cfg.Count <= 0 || cfg.Count >= 1000 {
			t.Fatalf("accepted a config that breaks its validations: %+v", cfg)
		}
		if cfg.Format.Type != "raw" && cfg.Format.Type != "structured" {
			t.Fatalf("accepted format.type %q", cfg.Format.Type)
		}
	})
}

type collection struct {
	Format     nested   `param:"format"`
	Operations []string `param:"operations" default:"create"`
	Weight     int      `param:"weight" validate:"required"`
}

type groupConfig struct {
	Collections map[string]collection `param:"collections.*"`
}

func TestParseMapOfStructs(t *testing.T) {
	is := is.New(t)
	params, err := Parameters(groupConfig{})
	is.NoErr(err)
	is.Equal(names(params), []string{"collections.*.format.options.*", "collections.*.format.type", "collections.*.operations", "collections.*.weight"})

	var cfg groupConfig
	is.NoErr(Parse(map[string]string{
		"collections.users.weight": "2", "collections.users.format.options.id": "int",
		"collections.orders.weight": "1", "collections.orders.format.type": "structured", "collections.orders.operations": "create,delete",
	}, &cfg))
	is.Equal(cfg.Collections, map[string]collection{
		"users":  {Format: nested{Type: "raw", Options: map[string]string{"id": "int"}}, Operations: []string{"create"}, Weight: 2},
		"orders": {Format: nested{Type: "structured", Options: map[string]string{}}, Operations: []string{"create", "delete"}, Weight: 1},
	})

	err = Parse(map[string]string{"collections.users.format.type": "xml", "collections.users.wieght": "1", "collections.a.b.weight": "1"}, &cfg)
	for _, want := range []string{
		`parameter "collections.users.format.type": got "xml", expected one of raw, structured`,
		`parameter "collections.users.weight": is required but missing`,
		`parameter "collections.users.wieght": is not a known parameter (did you mean "collections.*.weight"?)`,
		`parameter "collections.a.b.weight": is not a known parameter`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not contain %q", err, want)
		}
	}
}

func TestWildcardMatching(t *testing.T) {
	for _, tt := range []struct {
		pattern, key string
		want         bool
	}{
		{"a.*", "a.b", true},
		{"a.*", "a.b.c", true},
		{"a.*", "a.", false},
		{"a.*", "a", false},
		{"a.*.c", "a.b.c", true},
		{"a.*.c", "a.b.x.c", false},
		{"a.*.c", "a..c", false},
		{"a.*.c.*", "a.b.c.d.e", true},
		{"a.*.c.*", "a.b.c", false},
		{"a.b", "a.b", true},
		{"a.b", "a.b.", false},
	} {
		p := Parameter{Name: tt.pattern}
		if got := p.matches(tt.key); got != tt.want {
			t.Errorf("%q matches %q: got %v", tt.pattern, tt.key, got)
		}
	}
}

// TestBoundsReadAsWords checks that a value out of bounds is reported as a
// person would state the bounds, for the field's type.
func TestBoundsReadAsWords(t *testing.T) {
	type config struct {
		Count   int           `param:"count" validate:"gt=-1"`
		Workers int           `param:"workers" validate:"gt=0"`
		Percent int           `param:"percent" validate:"gt=0,lt=101"`
		Max     int           `param:"max" validate:"lt=10"`
		Small   int8          `param:"small"`
		Port    uint16        `param:"port" validate:"gt=0"`
		Plain   int64         `param:"plain"`
		Ratio   float64       `param:"ratio" validate:"gt=0"`
		Share   float64       `param:"share" validate:"gt=0,lt=1"`
		Single  float32       `param:"single"`
		Wait    time.Duration `param:"wait" validate:"gt=-1"`
		Tick    time.Duration `param:"tick" validate:"gt=0,lt=3600000000000"`
	}
	tests := []struct{ name, value, want string }{
		{"count", "-1", "at least 0"},
		{"count", "99999999999999999999", "between 0 and 9223372036854775807"},
		{"workers", "0", "at least 1"},
		{"percent", "0", "between 1 and 100"},
		{"percent", "101", "between 1 and 100"},
		{"max", "10", "at most 9"},
		{"small", "-129", "between -128 and 127"},
		{"port", "65536", "between 1 and 65535"},
		{"plain", "99999999999999999999", "at most 9223372036854775807"},
		{"plain", "-99999999999999999999", "at least -9223372036854775808"},
		{"plain", "1.5", "an integer"},
		{"ratio", "0", "greater than 0"},
		{"ratio", "NaN", "a finite number"},
		{"ratio", "-Inf", "a finite number"},
		{"ratio", "1e999", "a finite number"},
		{"ratio", "fast", "a number"},
		{"share", "1", "greater than 0 and less than 1"},
		{"single", "1e39", "a number between -3.4028234663852886e+38 and 3.4028234663852886e+38"},
		{"wait", "-1s", "at least 0s"},
		{"tick", "0s", "longer than 0s and shorter than 1h0m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name+"="+tt.value, func(t *testing.T) {
			is := is.New(t)
			var cfg config
			err := Parse(map[string]string{tt.name: tt.value}, &cfg)
			var pe *ParameterError
			is.True(errors.As(err, &pe))
			is.Equal(pe.Name, tt.name)   // the parameter
			is.Equal(pe.Value, tt.value) // the value given
			is.Equal(pe.Expected, tt.want)
		})
	}
}

// rangeConfig's Validate checks that min is below max, which no tag can.
type rangeConfig struct {
	Min  int    `param:"min" default:"0"`
	Max  int    `param:"max" default:"10"`
	Name string `param:"name" validate:"required"`
}

func (c *rangeConfig) Validate() error {
	var errs []error
	if c.Min >= c.Max {
		errs = append(errs, &ParameterError{Name: "min", Value: strconv.Itoa(c.Min), Expected: "less than max (" + strconv.Itoa(c.Max) + ")"})
	}
	if c.Name == "nobody" {
		errs = append(errs, errors.New("name: nobody is nobody"))
	}
	return errors.Join(errs...)
}

func TestValidateJoinsTagErrors(t *testing.T) {
	tests := []struct {
		name string
		raw  map[string]string
		want []string // the problems the error lists, in order
	}{{
		name: "valid",
		raw:  map[string]string{"name": "x", "min": "1", "max": "2"},
	}, {
		name: "Validate alone",
		raw:  map[string]string{"name": "nobody", "min": "5", "max": "5"},
		want: []string{`parameter "min": got "5", expected less than max (5)`, "name: nobody is nobody"},
	}, {
		name: "Validate runs although a tag failed",
		raw:  map[string]string{"min": "5", "max": "5"},
		want: []string{`parameter "name": is required but missing`, `parameter "min": got "5", expected less than max (5)`},
	}, {
		name: "a bad value holds its default for Validate",
		raw:  map[string]string{"name": "x", "min": "12", "max": "ten"},
		want: []string{`parameter "max": got "ten", expected an integer`, `parameter "min": got "12", expected less than max (10)`},
	}, {
		name: "what Validate says of a parameter already reported is left out",
		raw:  map[string]string{"name": "x", "min": "many", "max": "-1"},
		want: []string{`parameter "min": got "many", expected an integer`},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			var cfg rangeConfig
			err := Parse(tt.raw, &cfg)
			if tt.want == nil {
				is.NoErr(err)
				return
			}
			is.True(err != nil)
			is.Equal(err.Error(), strings.Join(tt.want, "; "))
		})
	}
}

// names returns the names of params.
func names(params []Parameter) []string {
	var out []string
	for _, p := range params {
		out = append(out, p.Name)
	}
	return out
}
