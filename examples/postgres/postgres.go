// Package postgres is a PostgreSQL connector that plays both roles: its
// [source] reads a consistent snapshot of tables and then their changes
// through logical replication, and its [destination] writes records to
// tables with set-based statements, creating and evolving them as the
// records need. The source's records describe their table's columns in
// metadata (postgres.columns), so the destination follows a source
// table's schema exactly; what the two share is in internal/pg.
package postgres

import (
	"github.com/connkit/connkit/examples/postgres/destination"
	"github.com/connkit/connkit/examples/postgres/source"
	"github.com/connkit/connkit/sdk"
)

// Connector is the postgres plugin.
var Connector = sdk.Connector{
	Name:        "postgres",
	Version:     "v0.1.0",
	Summary:     "Reads PostgreSQL tables (snapshot, then changes through logical replication) and writes records to them.",
	Description: "Source: a consistent snapshot of the tables in key order, then their inserts, updates and deletes through logical replication (pgoutput), resumable from any acknowledged position. Destination: creates, snapshots and updates upsert on the key (a plain insert when a record has no key); deletes delete by key. Structured payloads and raw JSON objects map to columns by name; missing tables and columns are created from the records. Consecutive records for the same table and operation are written with one statement.",
	Author:      "connkit",
	Source:      sdk.NewSource(source.New),
	Destination: sdk.NewDestination(destination.New),
}
