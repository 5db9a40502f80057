package skills

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func digestPackage(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "review")
	os.MkdirAll(filepath.Join(dir, "refs"), 0o700)
	os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: review\ndescription: Reviews.\n---\nReview.\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "refs", "a.md"), []byte("a\n"), 0o600)
	return dir
}

// A package pinned by its digest verifies; a changed byte, an added file
// or a renamed one changes the digest, and the refusal names the expected
// and actual digests as a *DigestError.
func TestPackagePinnedByDigest(t *testing.T) {
	dir := digestPackage(t)
	want, err := PackageDigest(dir)
	if err != nil || !digestPattern.MatchString(want) {
		t.Fatalf("digest %q, %v", want, err)
	}
	if err := VerifyPackage(dir, want); err != nil {
		t.Fatal(err)
	}
	// In order: the rename moves the file the second change added.
	for _, c := range []struct {
		name   string
		change func()
	}{
		{"byte", func() { os.WriteFile(filepath.Join(dir, "refs", "a.md"), []byte("b\n"), 0o600) }},
		{"added", func() { os.WriteFile(filepath.Join(dir, "refs", "b.md"), nil, 0o600) }},
		{"rename", func() { os.Rename(filepath.Join(dir, "refs", "b.md"), filepath.Join(dir, "refs", "c.md")) }},
	} {
		name := c.name
		c.change()
		err := VerifyPackage(dir, want)
		var de *DigestError
		if !errors.Is(err, ErrDigestMismatch) || !errors.As(err, &de) || de.Expected != want || de.Actual == want || !strings.Contains(err.Error(), de.Actual) {
			t.Errorf("%s: %v", name, err)
		}
		got, _ := PackageDigest(dir)
		if de != nil && de.Actual != got {
			t.Errorf("%s: actual %s, digest %s", name, de.Actual, got)
		}
		want = got
	}
}

// Hostile packages and pins: a malformed pin, a symlink (inside, or as the
// package), a FIFO (it would block a reader) and too many entries are refused, never hashed through.
func TestPackageDigestRefusesHostileInput(t *testing.T) {
	dir := digestPackage(t)
	for _, pin := range []string{"", "sha256:", "SHA256:" + strings.Repeat("a", 64), "sha256:" + strings.Repeat("A", 64), "sha512:" + strings.Repeat("a", 64), "sha256:" + strings.Repeat("a", 63) + "\n"} {
		if err := VerifyPackage(dir, pin); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("pin %q: %v", pin, err)
		}
	}
	link := digestPackage(t)
	os.Symlink("/etc/passwd", filepath.Join(link, "refs", "passwd"))
	if _, err := PackageDigest(link); !errors.Is(err, ErrUnsafePath) {
		t.Errorf("a symlink inside: %v", err)
	}
	fifo := digestPackage(t)
	if makeFIFO(filepath.Join(fifo, "refs"), "pipe") {
		if _, err := PackageDigest(fifo); !errors.Is(err, ErrUnsafePath) {
			t.Errorf("a FIFO inside: %v", err)
		}
	}
	alias := filepath.Join(t.TempDir(), "alias")
	os.Symlink(dir, alias)
	if _, err := PackageDigest(alias); !errors.Is(err, ErrUnsafePath) {
		t.Errorf("the package a symlink: %v", err)
	}
	if _, err := PackageDigest(filepath.Join(dir, "SKILL.md")); !errors.Is(err, ErrUnsafePath) {
		t.Errorf("the package a file: %v", err)
	}
	if _, err := PackageDigest(filepath.Join(dir, "missing")); !errors.Is(err, ErrIO) {
		t.Errorf("a missing package: %v", err)
	}
	many := digestPackage(t)
	for i := range maxDigestEntries {
		os.WriteFile(filepath.Join(many, "refs", "f"+strings.Repeat("x", i%7)+string(rune('a'+i%26))+"_"+itoa(i)), nil, 0o600)
	}
	if _, err := PackageDigest(many); !errors.Is(err, ErrLimitExceeded) {
		t.Errorf("too many entries: %v", err)
	}
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}
