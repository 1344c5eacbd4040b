package plugin

import "github.com/conduitio/conduit-commons/opencdc"

// recordSize estimates a record's size in bytes for batching limits,
// without serializing it.
func recordSize(r opencdc.Record) int {
	n := len(r.Position) + dataSize(r.Key) + dataSize(r.Payload.Before) + dataSize(r.Payload.After)
	for k, v := range r.Metadata {
		n += len(k) + len(v)
	}
	return n
}

func dataSize(d opencdc.Data) int {
	switch d := d.(type) {
	case opencdc.RawData:
		return len(d)
	case opencdc.StructuredData:
		return valueSize(map[string]any(d))
	}
	return 0
}

func valueSize(v any) int {
	switch v := v.(type) {
	case string:
		return len(v)
	case []byte:
		return len(v)
	case map[string]any:
		n := 0
		for k, e := range v {
			n += len(k) + valueSize(e)
		}
		return n
	case []any:
		n := 0
		for _, e := range v {
			n += valueSize(e)
		}
		return n
	case nil:
		return 0
	}
	return 8 // numbers, booleans and the like
}
