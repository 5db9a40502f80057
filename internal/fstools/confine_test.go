package fstools

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/pabloagent/pablo/authority"
)

// F02–F05: nothing outside the workspace is reachable by "..", by an absolute
// path, or through a symlink, final or internal; nothing of it leaks.
func TestPathsOutsideWorkspaceAreDenied(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{Write: true})
	f.write("real/inside.txt", "inside\n")
	f.symlink(filepath.Join(f.outside, "secret.txt"), "link.txt")
	f.symlink(f.outside, "outdir")
	f.symlink("real", "indir") // points inside: still denied
	f.symlink("real/inside.txt", "inlink.txt")
	abs := filepath.Join(f.outside, "secret.txt")
	tests := []struct {
		name, path, rule string
	}{
		{"dotdot", "../outside/secret.txt", authority.RuleWorkspace},
		{"absolute outside", abs, authority.RuleWorkspace},
		{"absolute inside with dotdot", filepath.Join(f.dir, "..", "outside", "secret.txt"), authority.RuleWorkspace},
		{"final symlink to outside", "link.txt", authority.RuleSymlink},
		{"internal symlink to outside", "outdir/secret.txt", authority.RuleSymlink},
		{"internal symlink to inside", "indir/inside.txt", authority.RuleSymlink},
		{"final symlink to inside", "inlink.txt", authority.RuleSymlink},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := f.tools.Read(bg(), ReadArgs{Path: tt.path})
			wantDenied(t, err, tt.rule)
			noSecret(t, r, err)
			dirPath := filepath.Dir(tt.path)
			if tt.rule == authority.RuleSymlink {
				dirPath = tt.path
			}
			l, err := f.tools.List(bg(), ListArgs{Path: dirPath})
			if err == nil {
				for _, e := range l.Entries {
					if e.Path == "secret.txt" || filepath.Base(e.Path) == "secret.txt" {
						t.Fatalf("listed outside entry %+v", e)
					}
				}
			}
			noSecret(t, l, err)
			_, err = f.tools.Write(bg(), WriteArgs{Path: tt.path, Text: "pwned"})
			if !errors.Is(err, authority.ErrDenied) {
				t.Fatalf("write: %v", err)
			}
		})
	}
	if b, _ := os.ReadFile(abs); string(b) != secret+"\n" {
		t.Fatal("outside file was modified")
	}
	if _, err := os.Stat(filepath.Join(f.outside, "pwned")); err == nil {
		t.Fatal("file created outside")
	}
}

func TestAbsolutePathInsideWorkspaceIsMadeRelative(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	f.write("a/b.txt", "hi")
	r, err := f.tools.Read(bg(), ReadArgs{Path: filepath.Join(f.ws.Dir(), "a", "b.txt")})
	if err != nil || r.Path != "a/b.txt" || r.Text != "hi" {
		t.Fatalf("%+v %v", r, err)
	}
}

func TestSymlinksAreListedButNeverFollowed(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	f.symlink(f.outside, "out")
	f.symlink(filepath.Join(f.outside, "secret.txt"), "s.txt")
	l, err := f.tools.List(bg(), ListArgs{Path: "."})
	if err != nil || len(l.Entries) != 2 || l.Entries[0].Type != TypeSymlink || l.Entries[1].Type != TypeSymlink {
		t.Fatalf("%+v %v", l, err)
	}
	s, err := f.tools.Search(bg(), SearchArgs{Path: ".", Query: "SECRET"})
	if err != nil || len(s.Matches) != 0 {
		t.Fatalf("%+v %v", s, err)
	}
	noSecret(t, s, err)
	_, err = f.tools.Search(bg(), SearchArgs{Path: "out", Query: "SECRET"})
	wantDenied(t, err, authority.RuleSymlink)
}

// F08: a directory swapped for a symlink between the check and the use is
// detected, not followed: the outside file is never read.
func TestDirectorySwappedForSymlinkDoesNotEscape(t *testing.T) {
	t.Parallel()
	for _, target := range []string{"outside", "inside"} {
		t.Run(target, func(t *testing.T) {
			f := newFixture(t, Options{})
			f.write("sub/secret.txt", "harmless\n")
			f.write("private/secret.txt", secret+"\n") // denied by policy below
			dest := f.outside
			if target == "inside" {
				dest = f.path("private")
			}
			f.tools.decide = func(_ authority.ResourceKind, rel string) authority.Decision {
				return authority.Decision{Allowed: !authority.WithinRoot("private", rel), Layer: "test", RuleID: "test.private"}
			}
			f.tools.hooks.betweenCheckAndOpen = func(rel, name string) {
				if name != "sub" {
					return
				}
				if err := os.Rename(f.path("sub"), f.path("sub.old")); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(dest, f.path("sub")); err != nil {
					t.Fatal(err)
				}
			}
			r, err := f.tools.Read(bg(), ReadArgs{Path: "sub/secret.txt"})
			noSecret(t, r, err)
			wantDenied(t, err, authority.RuleSymlink)
		})
	}
}

// A file swapped for a symlink (or another file) between its check and its
// open is detected by comparing the opened file with the inspected one.
func TestFileSwappedBetweenCheckAndOpenIsDetected(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	f.write("f.txt", "harmless\n")
	f.write("private.txt", secret+"\n")
	f.tools.hooks.betweenCheckAndOpen = func(rel, name string) {
		if name != "f.txt" {
			return
		}
		os.Remove(f.path("f.txt"))
		if err := os.Symlink("private.txt", f.path("f.txt")); err != nil {
			t.Fatal(err)
		}
	}
	r, err := f.tools.Read(bg(), ReadArgs{Path: "f.txt"})
	noSecret(t, r, err)
	wantDenied(t, err, authority.RuleSymlink)
}

// The guarantee underneath: os.Root itself never resolves a symlink to a
// place outside the root, whatever the checks above do.
func TestOSRootNeverEscapes(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	f.symlink(f.outside, "out")
	f.symlink(filepath.Join(f.outside, "secret.txt"), "s.txt")
	for _, name := range []string{"out/secret.txt", "s.txt", "../outside/secret.txt"} {
		b, err := f.ws.root.ReadFile(name)
		if err == nil {
			t.Fatalf("os.Root read %s: %q", name, b)
		}
	}
}

func TestPolicyDenialCarriesDecision(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{Write: true, Decide: func(k authority.ResourceKind, rel string) authority.Decision {
		if k == authority.ResourceWrite {
			return authority.Decision{Layer: "policy", RuleID: "no-writes", Reason: "read only"}
		}
		return authority.Decision{Allowed: !authority.WithinRoot("secret", rel), Layer: "policy", RuleID: "deny-secret"}
	}})
	f.write("secret/a.txt", "x")
	_, err := f.tools.Read(bg(), ReadArgs{Path: "secret/a.txt"})
	wantDenied(t, err, "deny-secret")
	_, err = f.tools.List(bg(), ListArgs{Path: "secret"})
	wantDenied(t, err, "deny-secret")
	_, err = f.tools.Write(bg(), WriteArgs{Path: "b.txt", Text: "x"})
	wantDenied(t, err, "no-writes")
}
