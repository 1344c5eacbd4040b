package format

import (
	"fmt"

	"github.com/conduitio/conduit-commons/opencdc"
)

// openCDCJSON writes a record as OpenCDC JSON, byte for byte what
// Record.Bytes returns with no serializer set: position and raw data in
// base64, structured data as JSON objects, keys sorted.
type openCDCJSON struct{}

func (openCDCJSON) Serialize(r opencdc.Record) ([]byte, error) {
	e := getEncoder()
	if err := e.record(r); err != nil {
		e.release()
		return nil, fmt.Errorf("%s: %w", OpenCDCJSON, err)
	}
	return e.bytes(), nil
}

func (e *encoder) record(r opencdc.Record) error {
	e.buf = append(e.buf, `{"position":`...)
	e.base64(r.Position)
	e.buf = append(e.buf, `,"operation":`...)
	e.string(r.Operation.String())
	e.buf = append(e.buf, `,"metadata":`...)
	e.stringMap(r.Metadata)
	e.buf = append(e.buf, `,"key":`...)
	if err := e.data(r.Key); err != nil {
		return fmt.Errorf("key: %w", err)
	}
	e.buf = append(e.buf, `,"payload":{"before":`...)
	if err := e.data(r.Payload.Before); err != nil {
		return fmt.Errorf("payload before: %w", err)
	}
	e.buf = append(e.buf, `,"after":`...)
	if err := e.data(r.Payload.After); err != nil {
		return fmt.Errorf("payload after: %w", err)
	}
	e.buf = append(e.buf, "}}"...)
	return nil
}

// data appends raw data as base64 and structured data as an object.
func (e *encoder) data(d opencdc.Data) error {
	switch d := d.(type) {
	case nil:
		e.buf = append(e.buf, "null"...)
	case opencdc.RawData:
		e.base64(d)
	case opencdc.StructuredData:
		return e.object(d)
	default:
		return e.other(d)
	}
	return nil
}
