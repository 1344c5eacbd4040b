package config_test

import (
	"fmt"
	"time"

	"github.com/connkit/connkit/sdk/config"
)

// Common holds parameters several connectors share; embedded without a
// param tag, its fields are the outer struct's.
type Common struct {
	Verbose bool `param:"verbose" desc:"Log every record."`
}

// Format is nested: its parameters are format.type and format.options.*.
type Format struct {
	Type    string            `param:"type" default:"json" validate:"inclusion=json|csv" desc:"How records are written."`
	Options map[string]string `param:"options.*" validate:"exclusion=debug" desc:"Options for the format, e.g. format.options.delimiter."`
}

// Collection is the element of a map of structs: collections.<name>.key
// and collections.<name>.mode.
type Collection struct {
	Key  string `param:"key" default:"id" desc:"The collection's key field."`
	Mode string `param:"mode" default:"upsert" validate:"inclusion=insert|upsert" desc:"How records are written to the collection."`
}

// Config uses every tag and every kind of field.
type Config struct {
	Common
	URL         string                `param:"url" validate:"required,regex=postgres://.+" desc:"Where to connect."`
	Workers     int                   `param:"workers" default:"4" validate:"gt=0,lt=65" desc:"Connections to open, 1 to 64."`
	Ratio       float64               `param:"ratio" default:"0.5" validate:"gt=0,lt=1" desc:"Share of rows to sample."`
	Timeout     time.Duration         `param:"timeout" default:"5s" validate:"gt=0" desc:"How long a statement may run."`
	Tables      []string              `param:"tables" default:"users,orders" desc:"Comma-separated tables to write."`
	Format      Format                `param:"format"`
	Collections map[string]Collection `param:"collections.*"`
	internal    string                // no param tag: not a parameter
}

func ExampleParse() {
	var cfg Config
	err := config.Parse(map[string]string{
		"url":                    "postgres://localhost/db",
		"verbose":                "true",
		"workers":                "8",
		"tables":                 "users, orders,items",
		"format.type":            "csv",
		"format.options.delim":   ";",
		"collections.users.key":  "email",
		"collections.orders.key": "number",
	}, &cfg)
	fmt.Println(err)
	fmt.Printf("%+v\n", cfg)

	err = config.Parse(map[string]string{
		"url":                    "mysql://localhost",
		"workers":                "0",
		"ratio":                  "1",
		"timeout":                "soon",
		"format.type":            "xml",
		"format.options.debug":   "debug",
		"collections.users.mode": "delete",
		"tabels":                 "users",
	}, &cfg)
	// One error, which reads on one line, its problems separated by "; ";
	// its Unwrap returns each.
	for _, problem := range err.(interface{ Unwrap() []error }).Unwrap() {
		fmt.Println(problem)
	}

	params, _ := config.Parameters(Config{})
	for _, p := range params {
		fmt.Printf("%s (%s) %s\n", p.Name, p.Type, p.Description)
	}
	// Output:
	// <nil>
	// {Common:{Verbose:true} URL:postgres://localhost/db Workers:8 Ratio:0.5 Timeout:5s Tables:[users orders items] Format:{Type:csv Options:map[delim:;]} Collections:map[orders:{Key:number Mode:upsert} users:{Key:email Mode:upsert}] internal:}
	// parameter "tabels": is not a known parameter (did you mean "tables"?)
	// parameter "format.options.debug": got "debug", expected none of debug
	// parameter "format.type": got "xml", expected one of json, csv
	// parameter "ratio": got "1", expected greater than 0 and less than 1
	// parameter "timeout": got "soon", expected a duration such as "1s" or "250ms"
	// parameter "url": got "mysql://localhost", expected a value matching postgres://.+
	// parameter "workers": got "0", expected between 1 and 64
	// parameter "collections.users.mode": got "delete", expected one of insert, upsert
	// collections.*.key (string) The collection's key field.
	// collections.*.mode (string) How records are written to the collection.
	// format.options.* (string) Options for the format, e.g. format.options.delimiter.
	// format.type (string) How records are written.
	// ratio (float) Share of rows to sample.
	// tables ([]string) Comma-separated tables to write.
	// timeout (duration) How long a statement may run.
	// url (string) Where to connect.
	// verbose (bool) Log every record.
	// workers (int) Connections to open, 1 to 64.
}

// Listener's Validate checks what tags cannot: cert is required only when
// tls is on.
type Listener struct {
	Port int    `param:"port" default:"8443" validate:"gt=0,lt=65536" desc:"Port to listen on."`
	TLS  bool   `param:"tls" desc:"Serve over TLS."`
	Cert string `param:"cert" desc:"Certificate file; required with tls."`
}

func (l Listener) Validate() error {
	if l.TLS && l.Cert == "" {
		return &config.ParameterError{Name: "cert", Expected: "is required when tls is true"}
	}
	return nil
}

// A config struct's Validate method runs even when some parameters failed,
// so that one error reports every problem, on one line.
func ExampleValidator() {
	var l Listener
	err := config.Parse(map[string]string{"port": "0", "tls": "true"}, &l)
	fmt.Println(err)
	// Output:
	// parameter "port": got "0", expected between 1 and 65535; parameter "cert": is required when tls is true
}

// Parameters lists what a config struct declares, as the specification
// shows it; Conduit gives them in the form a plugin sends Conduit.
func ExampleParameters() {
	type Config struct {
		Host string `param:"host" validate:"required" desc:"Where to connect."`
		Port int    `param:"port" default:"5432" validate:"gt=0,lt=65536" desc:"The port."`
	}
	params, _ := config.Parameters(Config{})
	for _, p := range params {
		fmt.Printf("%s %s %q required=%v\n", p.Name, p.Type, p.Default, p.Required)
	}
	port := config.Conduit(params)["port"]
	fmt.Println(port.Type, len(port.Validations))
	// Output:
	// host string "" required=true
	// port int "5432" required=false
	// int 2
}
