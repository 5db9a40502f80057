package skills

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// tarEntry is one entry of a test archive.
type tarEntry struct {
	name string
	typ  byte
	body string
	link string
}

func tarGz(t testing.TB, entries ...tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		typ := e.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		size := int64(len(e.body))
		if typ != tar.TypeReg {
			size = 0
		}
		hdr := &tar.Header{Name: e.name, Typeflag: typ, Size: size, Mode: 0o644, Linkname: e.link, ModTime: time.Unix(0, 0)}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if size > 0 {
			tw.Write([]byte(e.body))
		}
	}
	tw.Close()
	gz.Close()
	return buf.Bytes()
}

type zipEntry struct {
	name string
	body string
	mode os.FileMode
}

func zipOf(t testing.TB, entries ...zipEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate}
		if e.mode != 0 {
			h.SetMode(e.mode)
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(e.body))
	}
	zw.Close()
	return buf.Bytes()
}

const reviewSkill = "---\nname: review\ndescription: Reviews a change.\nmetadata:\n  version: 1.2.0\n---\nReview it; see checklist.md.\n"

func TestArchivePackageFlowsThroughDiscoveryActivationAndRead(t *testing.T) {
	ctx := context.Background()
	for name, data := range map[string][]byte{
		"review-1.2.0.tar.gz": tarGz(t, tarEntry{name: "review-1.2.0/", typ: tar.TypeDir}, tarEntry{name: "review-1.2.0/SKILL.md", body: reviewSkill},
			tarEntry{name: "review-1.2.0/docs/checklist.md", body: "- tests\n"}),
		"review-1.2.0.zip": zipOf(t, zipEntry{name: "SKILL.md", body: reviewSkill}, zipEntry{name: "docs/", mode: os.ModeDir | 0o755},
			zipEntry{name: "docs/checklist.md", body: "- tests\n"}),
		"flat.tgz": tarGz(t, tarEntry{name: "./SKILL.md", body: reviewSkill}, tarEntry{name: "./docs/checklist.md", body: "- tests\n"}),
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), name)
			os.WriteFile(path, data, 0o600)
			opts := Options{Packages: map[string]Package{"review": {Archive: path, Version: "1.2.0", Digest: archiveDigest(data)}}}
			cat, err := Discover(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			s, err := cat.Lookup("review")
			if err != nil || s.QualifiedName != "package/review" || s.Source == nil || s.Source.Format != "archive" || s.Source.Digest != archiveDigest(data) {
				t.Fatalf("skill = %+v, %v (findings %v)", s, err, cat.Findings())
			}
			act, err := cat.Activate(ctx, []string{"package/review"})
			if err != nil {
				t.Fatal(err)
			}
			if got := act.Skills()[0].Instructions; got != "Review it; see checklist.md.\n" {
				t.Fatalf("instructions = %q", got)
			}
			res, err := act.Read(ctx, ReadArguments{Skill: "package/review", Path: "docs/checklist.md"}, ReadOptions{})
			if err != nil || res.Text != "- tests\n" {
				t.Fatalf("read: %+v, %v", res, err)
			}
			if _, err := act.Read(ctx, ReadArguments{Skill: "package/review", Path: "docs"}, ReadOptions{}); CodeOf(err) != CodeNotFile {
				t.Errorf("read of a directory: %v", err)
			}
			if _, err := act.Read(ctx, ReadArguments{Skill: "package/review", Path: "none.md"}, ReadOptions{}); CodeOf(err) != CodeNotFound {
				t.Errorf("read of a missing file: %v", err)
			}
			// Nothing was extracted beside the archive.
			if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 1 {
				t.Errorf("the archive's directory holds %d entries", len(ents))
			}
		})
	}
}

// TestArchivePackageRefusedAtItsSource: a package whose digest, version
// or archive is wrong is not admitted; it is a finding with a code a
// person can act on, and activating it fails with the typed error.
func TestArchivePackageRefusedAtItsSource(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	data := tarGz(t, tarEntry{name: "SKILL.md", body: reviewSkill})
	path := filepath.Join(dir, "review.tar.gz")
	os.WriteFile(path, data, 0o600)
	other := "sha256:" + strings.Repeat("0", 64)
	cases := map[string]struct {
		p    Package
		code Code
		kind error
	}{
		"digest mismatch":  {Package{Archive: path, Digest: other}, CodeDigestMismatch, ErrDigestMismatch},
		"version mismatch": {Package{Archive: path, Version: "1.3.0", Digest: archiveDigest(data)}, CodeVersionUnresolved, ErrVersionUnresolved},
		"missing archive":  {Package{Archive: filepath.Join(dir, "none.tar.gz"), Digest: other}, CodeSourceMissing, ErrNotFound},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			cat, err := Discover(ctx, Options{Packages: map[string]Package{"review": c.p}})
			if err != nil {
				t.Fatal(err)
			}
			if f := cat.Findings(); len(cat.Skills()) != 0 || len(f) != 1 || f[0].Code != c.code || f[0].Root != PackageRoot {
				t.Fatalf("findings = %v", f)
			}
			_, err = cat.Activate(ctx, []string{"package/review"})
			if !errors.Is(err, c.kind) || CodeOf(err) != c.code && c.code != CodeDigestMismatch {
				t.Fatalf("activation: %v", err)
			}
			if _, err := cat.Lookup("review"); !errors.Is(err, c.kind) {
				t.Fatalf("lookup by short name: %v", err)
			}
		})
	}
	var de *DigestError
	cat, _ := Discover(ctx, Options{Packages: map[string]Package{"review": {Archive: path, Digest: other}}})
	if _, err := cat.Activate(ctx, []string{"review"}); !errors.As(err, &de) || de.Expected != other || de.Actual != archiveDigest(data) || de.Dir != "package/review" {
		t.Fatalf("digest error: %v", err)
	}
	for name, p := range map[string]Package{
		"no source":       {Digest: other},
		"two sources":     {Archive: path, Git: &GitSource{Repo: dir, Ref: "main"}, Digest: other},
		"bad extension":   {Archive: filepath.Join(dir, "review.rar"), Digest: other},
		"bad digest":      {Archive: path, Digest: "sha256:ABC"},
		"relative":        {Archive: "review.tar.gz", Digest: other},
		"remote git":      {Git: &GitSource{Repo: "https://git.example.test/skills.git", Ref: "v1"}, Digest: other},
		"ssh git":         {Git: &GitSource{Repo: "git@git.example.test:skills.git", Ref: "v1"}, Digest: other},
		"git with no ref": {Git: &GitSource{Repo: dir}, Digest: other},
	} {
		if _, err := Discover(ctx, Options{Packages: map[string]Package{"review": p}}); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := Discover(ctx, Options{Roots: map[string]string{PackageRoot: dir}, Packages: map[string]Package{"review": {Archive: path, Digest: other}}}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("a root named package beside packages: %v", err)
	}
	if err := VerifyPin(Options{}, "package/review", other); !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "its own digest") {
		t.Errorf("a pin of a package Skill: %v", err)
	}
}

// TestHostileArchivesAreRefused: an archive whose entries could leave the
// package, are not directories or regular files, or cross a bound is
// refused with a typed error before it is admitted.
func TestHostileArchivesAreRefused(t *testing.T) {
	skill := tarEntry{name: "SKILL.md", body: "---\nname: review\ndescription: d\n---\nx\n"}
	many := []tarEntry{skill}
	for i := range MaxPackageEntries + 1 {
		many = append(many, tarEntry{name: "d/" + strings.Repeat("x", 1+i%50) + string(rune('a'+i%26)) + "/" + strings.Repeat("y", i/26+1), typ: tar.TypeDir})
	}
	bomb := strings.Repeat("0", 2<<20)
	cases := map[string]struct {
		data   []byte
		format ArchiveFormat
		kind   error
		code   Code
	}{
		"tar zip-slip":         {tarGz(t, skill, tarEntry{name: "../evil", body: "x"}), ArchiveTarGzip, ErrUnsafePath, CodeUnsafeEntry},
		"tar nested zip-slip":  {tarGz(t, skill, tarEntry{name: "a/../../evil", body: "x"}), ArchiveTarGzip, ErrUnsafePath, CodeUnsafeEntry},
		"tar absolute":         {tarGz(t, skill, tarEntry{name: "/etc/passwd", body: "x"}), ArchiveTarGzip, ErrUnsafePath, CodeUnsafeEntry},
		"tar backslash":        {tarGz(t, skill, tarEntry{name: `..\evil`, body: "x"}), ArchiveTarGzip, ErrUnsafePath, CodeUnsafeEntry},
		"tar symlink":          {tarGz(t, skill, tarEntry{name: "link", typ: tar.TypeSymlink, link: "/etc/passwd"}), ArchiveTarGzip, ErrUnsafePath, CodeUnsafeEntry},
		"tar hard link":        {tarGz(t, skill, tarEntry{name: "link", typ: tar.TypeLink, link: "SKILL.md"}), ArchiveTarGzip, ErrUnsafePath, CodeUnsafeEntry},
		"tar device":           {tarGz(t, skill, tarEntry{name: "dev", typ: tar.TypeChar}), ArchiveTarGzip, ErrUnsafePath, CodeUnsafeEntry},
		"tar fifo":             {tarGz(t, skill, tarEntry{name: "fifo", typ: tar.TypeFifo}), ArchiveTarGzip, ErrUnsafePath, CodeUnsafeEntry},
		"tar duplicate":        {tarGz(t, skill, skill), ArchiveTarGzip, ErrInvalidPackage, CodePackageInvalid},
		"tar file and dir":     {tarGz(t, skill, tarEntry{name: "a", body: "x"}, tarEntry{name: "a/b", body: "y"}), ArchiveTarGzip, ErrInvalidPackage, CodePackageInvalid},
		"tar huge entry":       {tarGz(t, skill, tarEntry{name: "big", body: strings.Repeat("a", MaxPackageFileBytes+1)}), ArchiveTarGzip, ErrLimitExceeded, ""},
		"tar too many entries": {tarGz(t, many...), ArchiveTarGzip, ErrLimitExceeded, CodeLimitExceeded},
		"tar bomb ratio":       {tarGz(t, skill, tarEntry{name: "zeros", body: bomb}), ArchiveTarGzip, ErrLimitExceeded, CodeLimitExceeded},
		"not gzip":             {[]byte("PK\x03\x04 not a tar"), ArchiveTarGzip, ErrInvalidPackage, CodePackageInvalid},
		"truncated tar":        {tarGz(t, skill)[:40], ArchiveTarGzip, ErrInvalidPackage, CodePackageInvalid},
		"no SKILL.md":          {tarGz(t, tarEntry{name: "README.md", body: "x"}), ArchiveTarGzip, ErrInvalidPackage, CodeMissingSkillFile},
		"two top-level dirs":   {tarGz(t, tarEntry{name: "a/SKILL.md", body: skill.body}, tarEntry{name: "b/x", body: "x"}), ArchiveTarGzip, ErrInvalidPackage, CodeMissingSkillFile},
		"zip zip-slip":         {zipOf(t, zipEntry{name: "SKILL.md", body: skill.body}, zipEntry{name: "../../evil", body: "x"}), ArchiveZip, ErrUnsafePath, CodeUnsafeEntry},
		"zip absolute":         {zipOf(t, zipEntry{name: "SKILL.md", body: skill.body}, zipEntry{name: "/tmp/evil", body: "x"}), ArchiveZip, ErrUnsafePath, CodeUnsafeEntry},
		"zip symlink":          {zipOf(t, zipEntry{name: "SKILL.md", body: skill.body}, zipEntry{name: "link", body: "/etc/passwd", mode: os.ModeSymlink | 0o777}), ArchiveZip, ErrUnsafePath, CodeUnsafeEntry},
		"zip device":           {zipOf(t, zipEntry{name: "SKILL.md", body: skill.body}, zipEntry{name: "dev", mode: os.ModeDevice | 0o600}), ArchiveZip, ErrUnsafePath, CodeUnsafeEntry},
		"zip huge entry":       {zipOf(t, zipEntry{name: "SKILL.md", body: skill.body}, zipEntry{name: "big", body: strings.Repeat("a", MaxPackageFileBytes+1)}), ArchiveZip, ErrLimitExceeded, ""},
		"zip bomb ratio":       {zipOf(t, zipEntry{name: "SKILL.md", body: skill.body}, zipEntry{name: "zeros", body: bomb}), ArchiveZip, ErrLimitExceeded, CodeLimitExceeded},
		"zip duplicate":        {zipOf(t, zipEntry{name: "SKILL.md", body: skill.body}, zipEntry{name: "SKILL.md", body: skill.body}), ArchiveZip, ErrInvalidPackage, CodePackageInvalid},
		"not zip":              {[]byte("\x1f\x8b not a zip"), ArchiveZip, ErrInvalidPackage, CodePackageInvalid},
		"oversized archive":    {make([]byte, MaxPackageSourceBytes+1), ArchiveZip, ErrLimitExceeded, CodeLimitExceeded},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := readArchive(c.data, c.format)
			var e *Error
			if !errors.Is(err, c.kind) || !errors.As(err, &e) || (c.code != "" && e.Code != c.code) {
				t.Fatalf("err = %v (%#v)", err, e)
			}
		})
	}
	// The same refusal through discovery is a finding, and the archive is
	// never extracted.
	dir := t.TempDir()
	data := cases["tar zip-slip"].data
	path := filepath.Join(dir, "a", "review.tar.gz")
	os.Mkdir(filepath.Dir(path), 0o700)
	os.WriteFile(path, data, 0o600)
	cat, err := Discover(context.Background(), Options{Packages: map[string]Package{"review": {Archive: path, Digest: archiveDigest(data)}}})
	if err != nil {
		t.Fatal(err)
	}
	if f := cat.Findings(); len(f) != 1 || f[0].Code != CodeUnsafeEntry {
		t.Fatalf("findings = %v", f)
	}
	if _, err := os.Stat(filepath.Join(dir, "evil")); err == nil {
		t.Fatal("an entry was written outside the archive")
	}
}
