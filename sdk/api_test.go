package sdk_test

import (
	"bytes"
	"encoding/json"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// listed is what go list says of a package.
type listed struct {
	ImportPath string
	Export     string // the file of its export data
	Standard   bool
	DepOnly    bool
}

// goList runs go list -deps -export on patterns and returns the packages,
// the patterns' own first.
func goList(t *testing.T, patterns ...string) []listed {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-deps", "-export", "-json=ImportPath,Export,Standard,DepOnly"}, patterns...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []listed
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p listed
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// The contract a connector implements depends on none of the plugin's
// transports and tools, so that a library that implements a Destination
// does not pull them in: gRPC, go-plugin, Prometheus, Avro.
func TestContractImportsNoTransport(t *testing.T) {
	heavy := []string{"google.golang.org/grpc", "github.com/hashicorp/go-plugin", "github.com/prometheus/", "avro"}
	var deps int
	for _, p := range goList(t, "github.com/connkit/connkit/sdk/connector") {
		deps++
		for _, h := range heavy {
			if strings.Contains(p.ImportPath, h) {
				t.Errorf("sdk/connector depends on %s", p.ImportPath)
			}
		}
	}
	t.Logf("sdk/connector: %d packages with its dependencies", deps)
}

// publicPackages are the packages an author imports.
var publicPackages = []string{
	"github.com/connkit/connkit/sdk",
	"github.com/connkit/connkit/sdk/connector",
	"github.com/connkit/connkit/sdk/config",
	"github.com/connkit/connkit/sdk/metrics",
	"github.com/connkit/connkit/sdk/sdktest",
	"github.com/connkit/connkit/batcher",
	"github.com/connkit/connkit/middleware",
}

// No exported name of a public package shows a type of an internal
// package in its signature: an author could not name it.
func TestNoInternalTypeInExportedSignatures(t *testing.T) {
	exports := map[string]string{}
	for _, p := range goList(t, publicPackages...) {
		exports[p.ImportPath] = p.Export
	}
	imp := importer.ForCompiler(token.NewFileSet(), "gc", func(path string) (io.ReadCloser, error) {
		return os.Open(exports[path])
	})
	for _, path := range publicPackages {
		pkg, err := imp.Import(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range pkg.Scope().Names() {
			obj := pkg.Scope().Lookup(name)
			if !obj.Exported() {
				continue
			}
			for _, used := range exposed(obj) {
				t.Errorf("%s.%s shows %s, which no author can name", path, name, used)
			}
		}
	}
}

// exposed returns the types of internal packages that obj's signature
// shows: its type, and for a named type its exported methods and fields.
func exposed(obj types.Object) []string {
	w := walker{seen: map[types.Type]bool{}}
	if tn, ok := obj.(*types.TypeName); ok {
		named, _ := tn.Type().(*types.Named)
		if named == nil {
			w.walk(tn.Type()) // an alias
			return w.found
		}
		w.walk(named.Underlying())
		ms := types.NewMethodSet(types.NewPointer(named))
		for i := range ms.Len() {
			if m := ms.At(i).Obj(); m.Exported() {
				w.walk(m.Type())
			}
		}
		return w.found
	}
	w.walk(obj.Type())
	return w.found
}

// walker collects the internal named types a type is made of, through
// exported fields and the parameters and results of functions.
type walker struct {
	seen  map[types.Type]bool
	found []string
}

func (w *walker) walk(t types.Type) {
	if t == nil || w.seen[t] {
		return
	}
	w.seen[t] = true
	switch t := t.(type) {
	case *types.Alias:
		w.walk(types.Unalias(t))
	case *types.Named:
		if pkg := t.Obj().Pkg(); pkg != nil && isInternal(pkg.Path()) {
			w.found = append(w.found, pkg.Path()+"."+t.Obj().Name())
		}
		for a := range t.TypeArgs().Types() {
			w.walk(a)
		}
	case *types.Pointer:
		w.walk(t.Elem())
	case *types.Slice:
		w.walk(t.Elem())
	case *types.Array:
		w.walk(t.Elem())
	case *types.Map:
		w.walk(t.Key())
		w.walk(t.Elem())
	case *types.Chan:
		w.walk(t.Elem())
	case *types.Signature:
		for v := range t.Params().Variables() {
			w.walk(v.Type())
		}
		for v := range t.Results().Variables() {
			w.walk(v.Type())
		}
	case *types.Struct:
		for f := range t.Fields() {
			if f.Exported() {
				w.walk(f.Type())
			}
		}
	case *types.Interface:
		for m := range t.Methods() {
			if m.Exported() {
				w.walk(m.Type())
			}
		}
	}
}

func isInternal(path string) bool {
	return strings.Contains(path, "/internal/") || strings.HasSuffix(path, "/internal")
}
