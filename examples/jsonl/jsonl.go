// Package jsonl is a connector for files of JSON lines, one record per
// line: a destination that appends records to a file, and a source that
// reads them back, following the file as it grows.
//
// It is written as a connector outside this module would be: with the
// public API only (package sdk), and tested with package sdk/sdktest.
package jsonl

import (
	"github.com/connkit/connkit/sdk"
)

// Connector is the jsonl plugin: both a source and a destination.
var Connector = sdk.Connector{
	Name:        "jsonl",
	Version:     "v0.1.0",
	Summary:     "Reads and writes records as JSON lines in a file.",
	Description: "The destination appends each record to a file as one line of JSON and syncs the file before acknowledging. The source reads such a file from the start, or from where it stopped, and follows it as it grows.",
	Author:      "connkit",
	Source:      sdk.NewSource(NewSource),
	Destination: sdk.NewDestination(NewDestination),
}
