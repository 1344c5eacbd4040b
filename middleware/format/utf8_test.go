package format

import (
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/matryer/is"
)

// Raw data that would be a JSON object but for bytes that are not valid
// UTF-8 is not parsed, which would replace them with U+FFFD: it goes as
// bytes (base64) under the raw data key, unchanged.
func TestDebeziumRawInvalidUTF8(t *testing.T) {
	is := is.New(t)
	s, err := New(DebeziumJSON, "")
	is.NoErr(err)
	raw := []byte("{\"name\":\"a\xff\xfeb\"}")
	b, err := s.Serialize(opencdc.Record{Operation: opencdc.OperationCreate, Payload: opencdc.Change{After: opencdc.RawData(raw)}})
	is.NoErr(err)
	var event struct {
		Payload struct{ After map[string]string }
	}
	is.NoErr(json.Unmarshal(b, &event))
	got, err := base64.StdEncoding.DecodeString(event.Payload.After["opencdc.rawData"])
	is.NoErr(err)
	is.Equal(got, raw)
}
