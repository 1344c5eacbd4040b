// Package file is a connector for plain text files, a port of the
// incumbent's file connector (conduit-connector-file v0.10.3) with the same
// parameter and the same records: the source follows a file as it grows
// and turns each line into a record; the destination appends each record
// to a file as one line, in the pipeline's record format.
//
// It is written as a connector outside this module would be: with the
// public API only (package sdk), and tested with package
// sdk/sdktest.
package file

import "github.com/connkit/connkit/sdk"

// Connector is the file plugin: both a source and a destination.
var Connector = sdk.Connector{
	Name:        "file",
	Version:     "v0.1.0",
	Summary:     "Reads the lines of a file as it grows, and appends records to a file.",
	Description: "The source waits for the file if it does not exist yet, then reads it from the start, or from where it stopped, and follows it as it grows: each line is a create record whose key is the line's number and whose payload is the line. The destination creates the file if it does not exist and appends each record to it as one line, in the record format (OpenCDC JSON unless sdk.record.format says otherwise).",
	Author:      "connkit",
	Source:      sdk.NewSource(NewSource),
	Destination: sdk.NewDestination(NewDestination),
	// Lines are raw data, which has no schema to extract; the incumbent
	// turns extraction off for its source all the same, and so do we, so
	// that the two specifications agree.
	SourceDefaults: map[string]string{
		"sdk.schema.extract.payload.enabled": "false",
		"sdk.schema.extract.key.enabled":     "false",
	},
}

// Config is the configuration of both roles.
type Config struct {
	Path string `param:"path" validate:"required" desc:"The file the source reads or the destination appends records to."`
}
