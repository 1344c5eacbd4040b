package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// The registry entry's fixed values: the OIDC issuer of GitHub's
// workflows, which sign a release; the least Conduit that runs connkit's
// plugins; the kind of artifact a plugin binary is; the provenance the
// SLSA generator adds to a release, and its type.
const (
	githubOIDCIssuer  = "https://token.actions.githubusercontent.com"
	minConduitVersion = "0.14.0"
	artifactKind      = "standalone"
	provenanceFile    = "multiple.intoto.jsonl"
	provenanceType    = "https://slsa.dev/provenance/v1"
)

// indexEntry is a connector's entry in Conduit's registry index (schema
// version 1, an element of payload.connectors), with one version: what
// index.json holds.
type indexEntry struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Repository  string         `json:"repository"`
	Publisher   indexPublisher `json:"publisher"`
	Versions    []indexVersion `json:"versions"`
}

// indexPublisher is who may sign the connector's releases.
type indexPublisher struct {
	ExpectedOIDCIssuer      string `json:"expectedOIDCIssuer"`
	ExpectedIdentityPattern string `json:"expectedIdentityPattern"`
}

// indexVersion is a release: its archives, their provenance, and what it
// needs of Conduit.
type indexVersion struct {
	Version            string          `json:"version"` // without v
	ReleasedAt         time.Time       `json:"releasedAt"`
	MinConduitVersion  string          `json:"minConduitVersion"`
	MinProtocolVersion string          `json:"minProtocolVersion"`
	Artifacts          []indexArtifact `json:"artifacts"`
	SLSAProvenance     indexProvenance `json:"slsaProvenance"`
	Deprecated         bool            `json:"deprecated"`
}

// indexArtifact is a platform's archive, where it is published, and its
// signature.
type indexArtifact struct {
	OS        string         `json:"os"`
	Arch      string         `json:"arch"`
	Kind      string         `json:"kind"`
	URL       string         `json:"url"`
	SHA256    string         `json:"sha256"`
	Size      int64          `json:"size"`
	Signature indexSignature `json:"signature"`
}

// indexSignature is where an archive's Sigstore bundle is published.
type indexSignature struct {
	BundleURL string `json:"bundleURL"`
}

// indexProvenance is where the SLSA provenance of a release's archives is
// published, and its predicate type.
type indexProvenance struct {
	BundleURL     string `json:"bundleURL"`
	PredicateType string `json:"predicateType"`
}

// specSummary is what the registry entry takes from the plugin's
// specification.
type specSummary struct {
	Name, Version, Summary, Description string
}

// spec runs the command's binary for this machine with the argument
// spec, building it into tmp if no archive has it, and returns what the
// specification says.
func (p *releasePlan) spec(tmp string) (specSummary, error) {
	host := platform{runtime.GOOS, runtime.GOARCH}
	bin := filepath.Join(tmp, host.os+"_"+host.arch, p.binaryName(host))
	if _, err := os.Stat(bin); err != nil {
		if bin, err = p.build(host, tmp); err != nil {
			return specSummary{}, err
		}
	}
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "spec")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return specSummary{}, fmt.Errorf("%s spec: %w\n%s", p.cmd, err, stderr.Bytes())
	}
	var s specSummary
	if err := json.Unmarshal(out, &s); err != nil {
		return specSummary{}, fmt.Errorf("%s spec printed no specification: %w", p.cmd, err)
	}
	return s, nil
}

// checkSpec warns on stderr when the plugin names itself otherwise than
// the release: Conduit knows a standalone plugin by its specification's
// name and version, the registry by the entry's.
func (p *releasePlan) checkSpec(s specSummary, stderr io.Writer) {
	if s.Name != p.name {
		fmt.Fprintf(stderr, "connkit release: warning: the plugin's specification names it %q, the release %q (after its command, %s): a pipeline would name it standalone:%s\n", s.Name, p.name, p.cmd, s.Name)
	}
	if s.Version != p.version {
		fmt.Fprintf(stderr, "connkit release: warning: the plugin's specification says version %s, the release is %s: Conduit would run it as standalone:%s@%s (set the Connector's Version from a variable version in the package %s, which connkit release sets with -ldflags -X)\n", s.Version, p.version, s.Name, s.Version, p.module)
	}
}

// entry returns the registry index's entry for the release of artifacts.
// Its description is the specification's summary, or else its
// description.
func (p *releasePlan) entry(s specSummary, artifacts []artifact, releasedAt time.Time) indexEntry {
	v := indexVersion{
		Version:            strings.TrimPrefix(p.version, "v"),
		ReleasedAt:         releasedAt.UTC().Truncate(time.Second),
		MinConduitVersion:  minConduitVersion,
		MinProtocolVersion: p.protocol,
		SLSAProvenance:     indexProvenance{BundleURL: p.repo.downloadURL(p.version, provenanceFile), PredicateType: provenanceType},
	}
	for _, a := range artifacts {
		url := p.repo.downloadURL(p.version, filepath.Base(a.path))
		v.Artifacts = append(v.Artifacts, indexArtifact{
			OS: a.os, Arch: a.arch, Kind: artifactKind, URL: url, SHA256: a.sha256, Size: a.size,
			Signature: indexSignature{BundleURL: url + ".sigstore.json"},
		})
	}
	return indexEntry{
		Name:        p.name,
		Description: firstNonEmpty(s.Summary, s.Description),
		Repository:  p.repo.url(),
		Publisher:   indexPublisher{ExpectedOIDCIssuer: githubOIDCIssuer, ExpectedIdentityPattern: p.repo.identityPattern()},
		Versions:    []indexVersion{v},
	}
}

// firstNonEmpty returns the first of its arguments that is not empty.
func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// writeIndex writes checksums.txt and index.json into the output
// directory and says so on stdout.
func (p *releasePlan) writeIndex(s specSummary, artifacts []artifact, releasedAt time.Time, stdout io.Writer) error {
	sums := filepath.Join(p.out, "checksums.txt")
	if err := os.WriteFile(sums, checksums(artifacts), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s\n", p.show(sums))
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(p.entry(s, artifacts, releasedAt)); err != nil {
		return err
	}
	index := filepath.Join(p.out, "index.json")
	if err := os.WriteFile(index, buf.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: the entry of %s %s for Conduit's registry index (an element of payload.connectors)\n", p.show(index), p.name, strings.TrimPrefix(p.version, "v"))
	return nil
}

// checksums returns checksums.txt for artifacts: a line "SHA256  FILE"
// for each, sorted by file name, as sha256sum prints them.
func checksums(artifacts []artifact) []byte {
	names := map[string]string{} // file name → sha256
	for _, a := range artifacts {
		names[filepath.Base(a.path)] = a.sha256
	}
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(names)) {
		fmt.Fprintf(&b, "%s  %s\n", names[name], name)
	}
	return []byte(b.String())
}
