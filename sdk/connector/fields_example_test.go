package connector_test

import (
	"fmt"

	"github.com/connkit/connkit/sdk/connector"
)

// A destination reads a record's fields the same way whether the payload
// is structured data or raw JSON.
func ExampleFieldsOf() {
	for _, payload := range []connector.Data{
		connector.StructuredData{"id": 7, "name": "Ada", "active": true},
		connector.RawData(`{"id": 8, "name": "Grace", "active": "yes"}`),
		connector.RawData(`id=9`),
	} {
		f, err := connector.FieldsOf(payload)
		if err != nil {
			fmt.Println(err)
			continue
		}
		id, err := f.Int("id")
		if err != nil {
			fmt.Println(err)
			continue
		}
		name, _ := f.String("name")
		active, err := f.Bool("active")
		fmt.Println(id, name, active, err)
	}
	// Output:
	// 7 Ada true <nil>
	// 8 Grace false field "active": got "yes" (a string), expected true or false
	// sdk: the data is raw but not a JSON object ("id=9"): invalid character 'i' looking for beginning of value
}
