package e2e

import (
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"gopkg.in/yaml.v3"
)

// specYAML runs a plugin binary with args and decodes the YAML it prints.
func specYAML(t *testing.T, path string, args ...string) map[string]any {
	t.Helper()
	out, err := exec.Command(path, args...).Output()
	if err != nil {
		t.Fatalf("%s %v: %v", path, args, err)
	}
	var spec map[string]any
	if err := yaml.Unmarshal(out, &spec); err != nil {
		t.Fatalf("%s %v prints no YAML: %v\n%s", path, args, err, out)
	}
	return spec
}

// destinationParams returns a connector.yaml's destination parameters by
// name.
func destinationParams(t *testing.T, spec map[string]any) map[string]map[string]any {
	t.Helper()
	params := map[string]map[string]any{}
	s, _ := spec["specification"].(map[string]any)
	d, _ := s["destination"].(map[string]any)
	list, _ := d["parameters"].([]any)
	for _, p := range list {
		m, _ := p.(map[string]any)
		name, _ := m["name"].(string)
		params[name] = m
	}
	if len(params) == 0 {
		t.Fatalf("no destination parameters in %v", spec)
	}
	return params
}

// TestSpecYAMLMatchesTheIncumbents holds connkit's log plugin's
// connector.yaml to what the incumbent's log plugin prints with `spec`:
// the same keys everywhere, the same level parameter but for its
// description, and every sdk.* parameter the incumbent has with its type
// and default.
func TestSpecYAMLMatchesTheIncumbents(t *testing.T) {
	want := specYAML(t, filepath.Join(incumbentBin(t), "log"), "spec")
	got := specYAML(t, binary("connkit-log"), "spec", "-format", "yaml")
	if !slices.Equal(slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want))) {
		t.Errorf("top-level keys: got %v, want %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	}
	gs, ws := got["specification"].(map[string]any), want["specification"].(map[string]any)
	if !slices.Equal(slices.Sorted(maps.Keys(gs)), slices.Sorted(maps.Keys(ws))) {
		t.Errorf("specification keys: got %v, want %v", slices.Sorted(maps.Keys(gs)), slices.Sorted(maps.Keys(ws)))
	}
	gp, wp := destinationParams(t, got), destinationParams(t, want)
	for name, w := range wp {
		g, ok := gp[name]
		switch {
		case name == "message":
			continue // the incumbent's log plugin has a parameter connkit's lacks
		case !ok:
			t.Errorf("parameter %s is missing", name)
			continue
		}
		if !slices.Equal(slices.Sorted(maps.Keys(g)), slices.Sorted(maps.Keys(w))) {
			t.Errorf("%s: keys: got %v, want %v", name, slices.Sorted(maps.Keys(g)), slices.Sorted(maps.Keys(w)))
		}
		for _, key := range []string{"type", "default"} {
			if g[key] != w[key] {
				t.Errorf("%s: %s: got %v, want %v", name, key, g[key], w[key])
			}
		}
	}
	g, w := gp["level"], wp["level"]
	delete(g, "description")
	delete(w, "description")
	if gy, wy := mustYAML(t, g), mustYAML(t, w); gy != wy {
		t.Errorf("level: got\n%s\nwant\n%s", gy, wy)
	}
}

func mustYAML(t *testing.T, v any) string {
	t.Helper()
	out, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}
