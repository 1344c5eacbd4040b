// Package wire is the protobuf wire form of the connector protocol's
// records, encoded and decoded without the generated types: a source's Run
// responses ([SplitSourceRunResponse], split to fit Conduit's message
// limit), a destination's Run requests ([RecordDecoder]) and its acks
// ([SplitAcks]). It reads the wire format field by field ([Fields]), and
// carries messages that encode and decode themselves through gRPC
// ([Codec]), in buffers it lends and gRPC gives back ([Buffers]). The
// plugin server sends and receives records with it; the host reads only
// what it measures.
package wire

import "google.golang.org/protobuf/encoding/protowire"

// Field is one field of a message, as it stands on the wire.
type Field struct {
	Num   protowire.Number
	Type  protowire.Type
	Bytes []byte // a length-delimited field's content, aliasing the message
	Value uint64 // a varint's or fixed-size field's value
}

// Fields calls f with each field of the message in b, in wire order, and
// stops at the first error, f's or the message's (protowire's). A group is
// passed whole, with nothing of its content.
func Fields(b []byte, f func(Field) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		field := Field{Num: num, Type: typ}
		switch typ {
		case protowire.VarintType:
			field.Value, n = protowire.ConsumeVarint(b)
		case protowire.Fixed64Type:
			field.Value, n = protowire.ConsumeFixed64(b)
		case protowire.Fixed32Type:
			var v uint32
			v, n = protowire.ConsumeFixed32(b)
			field.Value = uint64(v)
		case protowire.BytesType:
			field.Bytes, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		if err := f(field); err != nil {
			return err
		}
	}
	return nil
}
