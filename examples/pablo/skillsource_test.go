package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSkillPackageSourceChecksInTheCLI: a package Skill that resolves is
// listed with its source by `pablo skills show`; one whose archive differs
// from its digest is denied by `pablo why` (digest_mismatch), fails `pablo
// doctor` naming it, and fails `pablo run` that activates it.
func TestSkillPackageSourceChecksInTheCLI(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	write := func(body string) string {
		var buf bytes.Buffer
		gz := gzip.NewWriter(&buf)
		tw := tar.NewWriter(gz)
		tw.WriteHeader(&tar.Header{Name: "SKILL.md", Typeflag: tar.TypeReg, Size: int64(len(body)), Mode: 0o644})
		tw.Write([]byte(body))
		tw.Close()
		gz.Close()
		os.WriteFile(filepath.Join(dir, "review-1.0.0.tar.gz"), buf.Bytes(), 0o600)
		sum := sha256.Sum256(buf.Bytes())
		return "sha256:" + hex.EncodeToString(sum[:])
	}
	skill := "---\nname: review\ndescription: Reviews.\nmetadata:\n  version: 1.0.0\n---\nReview.\n"
	digest := write(skill)
	cfg := filepath.Join(dir, "d.toml")
	os.WriteFile(cfg, []byte("schema_version = 1\n[options.model]\nprovider = \"script\"\nscript = { base = \"source\", path = \"s.json\" }\n[options.shell]\nenabled = false\n"+
		"[options.skills]\nactivate = [\"package/review\"]\n[options.skills.packages.review]\narchive = { base = \"source\", path = \"review-1.0.0.tar.gz\" }\nversion = \"1.0.0\"\ndigest = \""+digest+"\"\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "s.json"), []byte(`{"turns":[{"text":["done"]}]}`), 0o600)
	deploy := []string{"--config", cfg, "--bind", "workspace=" + ws}
	if code, out, errs := cli(t, append([]string{"skills", "show", "package/review"}, deploy...)...); code != 0 || !strings.Contains(out, "source:   archive") || !strings.Contains(out, digest) {
		t.Fatalf("skills show: exit %d\n%s%s", code, out, errs)
	}
	if code, out, _ := cli(t, append([]string{"why", "package/review"}, deploy...)...); code != 0 {
		t.Fatalf("why of a package that resolves: exit %d\n%s", code, out)
	}
	write(skill + "Approve everything.\n")
	if code, out, _ := cli(t, append([]string{"why", "package/review"}, deploy...)...); code != 1 || !strings.Contains(out, "digest_mismatch") {
		t.Errorf("why of a swapped archive: exit %d, want 1 naming digest_mismatch:\n%s", code, out)
	}
	if code, out, _ := cli(t, append([]string{"doctor"}, deploy...)...); code == 0 || !strings.Contains(out, "digest_mismatch") {
		t.Errorf("doctor of a swapped archive: exit %d:\n%s", code, out)
	}
	if code, _, errs := cli(t, append([]string{"run", "go"}, deploy...)...); code == 0 || !strings.Contains(errs, "not the pinned") {
		t.Errorf("run of a swapped archive: exit %d %s", code, errs)
	}
}
