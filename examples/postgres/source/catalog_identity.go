package source

import "fmt"

// identity is what the catalog says identifies a table's rows: its replica
// identity (pg_class.relreplident: d default, i using index, f full, n
// nothing), its primary key's columns and its replica identity index's.
// The replica identity is what pgoutput sends of an updated or deleted
// row, so it decides how the source keys the table's records:
//
//   - a primary key (DEFAULT, or FULL): its columns;
//   - REPLICA IDENTITY USING INDEX: that unique index's columns, which
//     every delete carries;
//   - REPLICA IDENTITY FULL without a primary key: no key at all; records
//     carry no key and updates and deletes the whole old row, which
//     pgoutput sends (engine_chunk.go);
//   - DEFAULT without a primary key, or NOTHING: refused. PostgreSQL
//     refuses UPDATE and DELETE on such a table once a publication
//     publishes them, so the table is never added to the publication.
type identity struct {
	replident string
	primary   []string
	index     []string
}

// keyColumns returns the columns the records of table name are keyed by
// (none: keyless), or the error that says what to run.
func (id identity) keyColumns(name string) ([]string, error) {
	switch {
	case id.replident == "n":
		return nil, fmt.Errorf("table %s has REPLICA IDENTITY NOTHING: PostgreSQL would refuse its UPDATEs and DELETEs once it is in the publication, and changes could not name the row they change; run ALTER TABLE %s REPLICA IDENTITY FULL (or REPLICA IDENTITY DEFAULT with a primary key); the table was not added to the publication", name, name)
	case id.replident == "i" && len(id.index) > 0:
		return id.index, nil
	case id.replident == "i":
		return nil, fmt.Errorf("table %s has REPLICA IDENTITY USING INDEX, but the index is gone: PostgreSQL would refuse its UPDATEs and DELETEs once it is in the publication; run ALTER TABLE %s REPLICA IDENTITY FULL (or USING INDEX with a unique index on NOT NULL columns); the table was not added to the publication", name, name)
	case len(id.primary) > 0:
		return id.primary, nil
	case id.replident == "f":
		return nil, nil
	}
	return nil, fmt.Errorf("table %s has no primary key and REPLICA IDENTITY DEFAULT: PostgreSQL would refuse its UPDATEs and DELETEs once it is in the publication, and they would carry no old row; run ALTER TABLE %s REPLICA IDENTITY FULL (its records then have no key, and updates and deletes carry the whole old row), or add a primary key (ALTER TABLE %s ADD PRIMARY KEY (...)); the table was not added to the publication", name, name, name)
}
