package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/internal/host"
	"github.com/matryer/is"
)

// TestReadmeConnector builds the connector README shows and runs it over the
// protocol, so the README cannot drift from the API.
func TestReadmeConnector(t *testing.T) {
	is := is.New(t)
	readme, err := os.ReadFile("../../README.md")
	is.NoErr(err)
	block := regexp.MustCompile("(?s)```go\n(.*?)```").FindSubmatch(readme)
	is.True(block != nil)

	// testdata is inside the module, so the program builds against this
	// checkout of the sdk, and ./... ignores it.
	dir, err := os.MkdirTemp("testdata", "readme-")
	is.NoErr(err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	is.NoErr(os.WriteFile(filepath.Join(dir, "main.go"), block[1], 0o644))
	bin := filepath.Join(t.TempDir(), "printer")
	out, err := exec.Command("go", "build", "-o", bin, "./"+dir).CombinedOutput()
	if err != nil {
		t.Fatalf("README's connector does not build: %v\n%s", err, out)
	}

	p, err := host.Launch(bin, host.Options{})
	is.NoErr(err)
	defer p.Kill()
	dst, err := p.Destination()
	is.NoErr(err)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	_, err = dst.Configure(ctx, pconnector.DestinationConfigureRequest{Config: map[string]string{"prefx": "#"}})
	is.True(err != nil)
	is.True(regexp.MustCompile(`parameter "prefx": is not a known parameter \(did you mean "prefix"\?\)`).MatchString(err.Error()))
	_, err = dst.Configure(ctx, pconnector.DestinationConfigureRequest{Config: map[string]string{"prefix": "#"}})
	is.NoErr(err)
	acks := runAndWrite(t, dst, opencdc.Record{Position: opencdc.Position("42")})
	is.Equal(len(acks), 1)
	is.Equal(string(acks[0].Position), "42")
	is.Equal(acks[0].Error, "")
}
