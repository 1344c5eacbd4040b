package schema

import (
	"fmt"

	"github.com/conduitio/conduit-commons/opencdc"
	cavro "github.com/conduitio/conduit-commons/schema/avro"
)

// Extract returns the text of an Avro record schema with a field for each
// key of d, typed after the value's Go type (see the package documentation
// for the mapping; nil and empty containers become nullable strings). The
// text is the one conduit-commons' avro.SerdeForType, and so Conduit's SDK,
// derives for d: fields sorted by name, canonical form. It is an error if a
// value has a type Avro cannot hold, such as uint64.
func Extract(d opencdc.StructuredData) ([]byte, error) {
	serde, err := cavro.SerdeForType(d)
	if err != nil {
		return nil, fmt.Errorf("extract schema: %w", err)
	}
	return []byte(serde.String()), nil
}
