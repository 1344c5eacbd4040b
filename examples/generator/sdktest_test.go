package generator_test

import (
	"testing"

	"github.com/connkit/connkit/examples/generator"
	"github.com/connkit/connkit/sdk/sdktest"
)

func TestConformance(t *testing.T) {
	for _, format := range []string{"raw", "structured"} {
		t.Run(format, func(t *testing.T) {
			sdktest.Source(t, sdktest.SourceSuite{
				Connector: generator.Connector,
				Config: map[string]string{
					"format.type":       format,
					"format.options.id": "int",
					"format.options.at": "time",
					"operations":        "create,update,delete,snapshot",
				},
				Plugin: sdktest.Plugin("connkit-generator", "./cmd/connkit-generator"),
			})
		})
	}
}
