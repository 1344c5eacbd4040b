package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"testing"
)

// installable returns the binary that Conduit's registry installs from
// the gzipped tar archive r, and the headers of every entry, by the
// registry's rules: an entry whose name is absolute or climbs out with ..
// is refused, and so is a symbolic or hard link; directories are skipped;
// the one regular file at the archive's root is the binary, and an
// archive with none, or more than one, is refused. It is written from
// those rules, apart from the code that makes archives.
func installable(r io.Reader) (bin *tar.Header, content []byte, entries []*tar.Header, err error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("not gzip: %w", err)
	}
	tr := tar.NewReader(zr)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, nil, nil, fmt.Errorf("not tar: %w", err)
		}
		entries = append(entries, hdr)
		name := path.Clean(hdr.Name)
		if path.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
			return nil, nil, nil, fmt.Errorf("entry %q escapes the directory", hdr.Name)
		}
		switch hdr.Typeflag {
		case tar.TypeSymlink, tar.TypeLink:
			return nil, nil, nil, fmt.Errorf("entry %q is a link", hdr.Name)
		case tar.TypeReg:
			if strings.Contains(name, "/") {
				continue // not a candidate
			}
			if bin != nil {
				return nil, nil, nil, fmt.Errorf("two regular files at the root: %q and %q", bin.Name, hdr.Name)
			}
			if content, err = io.ReadAll(tr); err != nil {
				return nil, nil, nil, err
			}
			bin = hdr
		}
	}
	if bin == nil {
		return nil, nil, nil, errors.New("no regular file at the root")
	}
	return bin, content, entries, zr.Close()
}

// entry is a tar entry for a test archive.
type entry struct {
	name     string
	typeflag byte
	linkname string
}

// tarGz returns a gzipped tar archive of entries, each regular file
// holding its name.
func tarGz(t *testing.T, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Typeflag: e.typeflag, Linkname: e.linkname, Mode: 0o755}
		if e.typeflag == tar.TypeReg {
			hdr.Size = int64(len(e.name))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if e.typeflag == tar.TypeReg {
			if _, err := io.WriteString(tw, e.name); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := errors.Join(tw.Close(), zw.Close()); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// The reader that checks release archives refuses what the registry
// refuses, and finds the binary where the registry does.
func TestInstallableFollowsTheRegistrysRules(t *testing.T) {
	reg := func(name string) entry { return entry{name: name, typeflag: tar.TypeReg} }
	for _, tt := range []struct {
		name    string
		entries []entry
		want    string // the binary's name, or the error's start
	}{
		{"one file", []entry{reg("lines")}, "lines"},
		{"a directory and a nested file beside it", []entry{{name: "docs/", typeflag: tar.TypeDir}, reg("docs/LICENSE"), reg("lines")}, "lines"},
		{"two files at the root", []entry{reg("lines"), reg("README")}, "two regular files"},
		{"no file at the root", []entry{{name: "bin/", typeflag: tar.TypeDir}, reg("bin/lines")}, "no regular file"},
		{"empty", nil, "no regular file"},
		{"a symbolic link", []entry{reg("lines"), {name: "l", typeflag: tar.TypeSymlink, linkname: "lines"}}, "entry \"l\" is a link"},
		{"a hard link", []entry{{name: "l", typeflag: tar.TypeLink, linkname: "lines"}}, "entry \"l\" is a link"},
		{"a climb out", []entry{reg("../lines")}, "entry \"../lines\" escapes"},
		{"a climb out, deeper", []entry{reg("a/../../lines")}, "entry \"a/../../lines\" escapes"},
		{"an absolute path", []entry{reg("/usr/bin/lines")}, "entry \"/usr/bin/lines\" escapes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			bin, content, _, err := installable(bytes.NewReader(tarGz(t, tt.entries...)))
			switch {
			case err != nil && !strings.HasPrefix(err.Error(), tt.want):
				t.Errorf("refused with %v, want %q", err, tt.want)
			case err == nil && (bin.Name != tt.want || string(content) != tt.want):
				t.Errorf("installs %q holding %q, want %q", bin.Name, content, tt.want)
			}
		})
	}
	if _, _, _, err := installable(strings.NewReader("lines")); err == nil || !strings.HasPrefix(err.Error(), "not gzip") {
		t.Errorf("a file that is no archive: %v, want a refusal", err)
	}
}

// executablePlatform returns the platform an executable is for, from its
// format (ELF for linux, Mach-O for darwin, PE for windows) and machine.
func executablePlatform(b []byte) (platform, error) {
	r := bytes.NewReader(b)
	if f, err := elf.NewFile(r); err == nil {
		arch := map[elf.Machine]string{elf.EM_X86_64: "amd64", elf.EM_AARCH64: "arm64"}[f.Machine]
		return platform{"linux", arch}, nil
	}
	if f, err := macho.NewFile(r); err == nil {
		arch := map[macho.Cpu]string{macho.CpuAmd64: "amd64", macho.CpuArm64: "arm64"}[f.Cpu]
		return platform{"darwin", arch}, nil
	}
	if f, err := pe.NewFile(r); err == nil {
		arch := map[uint16]string{pe.IMAGE_FILE_MACHINE_AMD64: "amd64", pe.IMAGE_FILE_MACHINE_ARM64: "arm64"}[f.Machine]
		return platform{"windows", arch}, nil
	}
	return platform{}, errors.New("not an ELF, Mach-O or PE executable")
}
