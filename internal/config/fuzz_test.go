package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzLoad feeds arbitrary documents to the loader: it must never panic, and
// every failure must be a typed *Error with a known code.
func FuzzLoad(f *testing.F) {
	for _, p := range []string{"presets/base.toml", "examples/vercel.toml", "examples/open-responses.toml"} {
		b, err := os.ReadFile(filepath.Join(originals, p))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("schema_version = 1\n[options.policy.tools]\ndefault = \"deny\"\nallow = { mode = \"append\", items = [{ id = \"a\", value = \"fs.read\" }] }\n"))
	f.Add([]byte("schema_version = 1\nprofile = \"a\"\n[profiles.a]\nextends = [\"b\"]\n[profiles.b.options.shell]\nenabled = false\n"))
	f.Add([]byte("schema_version = 1\n[[authority]]\nid = \"x\"\ntool_names = []\n"))
	// The shapes whose decoding grows faster than their size, small.
	for _, sh := range adversarialShapes() {
		if doc := sh.doc(4 << 10); len(doc) <= 8<<10 {
			f.Add([]byte(doc))
		}
	}
	dir := f.TempDir()
	ws := filepath.Join(dir, "ws")
	os.Mkdir(ws, 0o700)
	f.Fuzz(func(t *testing.T, doc []byte) {
		p := filepath.Join(dir, "entry.toml")
		if err := os.WriteFile(p, doc, 0o600); err != nil {
			t.Skip()
		}
		d, err := Load(LoadOptions{Config: p, Bindings: map[string]string{"workspace": ws}})
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) || !strings.HasPrefix(string(ce.Code), "config_") {
				t.Fatalf("untyped error: %T %v", err, err)
			}
			return
		}
		if !strings.HasPrefix(d.Fingerprint, "sha256:") {
			t.Fatal("no fingerprint")
		}
		if _, err := d.Authority(); err != nil {
			t.Fatalf("a loaded deployment must build its authority: %v", err)
		}
	})
}

// FuzzResolveInside checks that no relative path resolves outside its root,
// whatever symlinks the tree holds.
func FuzzResolveInside(f *testing.F) {
	root := f.TempDir()
	outside := f.TempDir()
	os.MkdirAll(filepath.Join(root, "a", "b"), 0o700)
	os.Symlink(outside, filepath.Join(root, "a", "out"))
	os.Symlink("../..", filepath.Join(root, "a", "b", "up"))
	os.Symlink("b", filepath.Join(root, "a", "in"))
	realRoot, _ := filepath.EvalSymlinks(root)
	for _, s := range []string{".", "a", "a/out/x", "a/b/up/x", "a/in/c", "../x", "a/../../x", "/etc", "a//b", "a/./b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, rel string) {
		got, err := ResolveInside(realRoot, rel)
		if err != nil {
			return
		}
		if got != realRoot && !strings.HasPrefix(got, realRoot+string(filepath.Separator)) {
			t.Fatalf("%q resolved outside the root: %s", rel, got)
		}
	})
}

func TestResolveInsideRejectsSymlinkEscapes(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o600)
	os.Symlink(outside, filepath.Join(root, "out"))
	realRoot, _ := filepath.EvalSymlinks(root)
	for _, rel := range []string{"out/secret", "out", "../x", "/etc/passwd", "a/../../x"} {
		if _, err := ResolveInside(realRoot, rel); err == nil {
			t.Errorf("%q resolved", rel)
		}
	}
	if got, err := ResolveInside(realRoot, "new/file"); err != nil || got != filepath.Join(realRoot, "new/file") {
		t.Errorf("a not-yet-existing path inside: %q %v", got, err)
	}
}
