//go:build linux

package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// launcherWithCache is a ready launcher whose /etc view lives under dir.
func launcherWithCache(t *testing.T, dir string) *Launcher {
	t.Helper()
	needBwrap(t)
	l := NewLauncher("")
	l.cacheDir = dir
	return l
}

// etcArgs is what a call under p binds at /etc: the view's directory, or
// the files bound one by one.
func etcArgs(t *testing.T, l *Launcher, p Profile, ws string) (view string, files []string) {
	t.Helper()
	a := l.args(p.Normalized(), Spec{Path: "/bin/true", Args: []string{"true"}, Workspace: ws, Dir: ws})
	for i := 0; i+2 < len(a); i++ {
		switch {
		case a[i] == "--ro-bind" && a[i+2] == "/etc":
			view = a[i+1]
		case a[i] == "--ro-bind-try" && strings.HasPrefix(a[i+2], "/etc/"):
			files = append(files, a[i+2])
		}
	}
	return view, files
}

// TestEtcViewShowsExactlyTheNamedFilesInOneMount: with network deny, /etc
// is one read-only mount of a view that holds the files etcRun names and
// nothing else of the host's /etc, with the host's content; a shell runs
// and resolves the sandbox's user by name through it.
func TestEtcViewShowsExactlyTheNamedFilesInOneMount(t *testing.T) {
	l := launcherWithCache(t, t.TempDir())
	ws := t.TempDir()
	view, files := etcArgs(t, l, Profile{}, ws)
	if view == "" || len(files) != 0 {
		t.Fatalf("view %q, files bound one by one %q: want one mount", view, files)
	}
	var want []string
	for _, f := range etcRun {
		if _, err := os.Lstat(f); err == nil {
			want = append(want, filepath.Base(f))
		}
	}
	slices.Sort(want)
	out, errOut, code, err := run(t, l, Profile{}, ws, `ls -A /etc; id -un; cat /etc/passwd | head -c 64; touch /etc/x 2>/dev/null && echo writable || echo read-only`)
	if err != nil || code != 0 {
		t.Fatalf("code %d, err %v, stderr %q", code, err, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if got := lines[:len(want)]; !slices.Equal(got, want) {
		t.Fatalf("/etc shows %q, want exactly %q", got, want)
	}
	host, _ := os.ReadFile("/etc/passwd")
	rest := strings.Join(lines[len(want):], "\n")
	if !strings.Contains(rest, "nobody") || !strings.Contains(rest, string(host[:min(len(host), 16)])) || !strings.HasSuffix(rest, "read-only") {
		t.Fatalf("inside: %q", rest)
	}
}

// TestEtcViewIsNeverShownStaleOrTampered: a view that no longer matches
// the host's files, holds one file more, or that another user could write,
// is never shown; the next launcher makes a fresh one.
func TestEtcViewIsNeverShownStaleOrTampered(t *testing.T) {
	cache := t.TempDir()
	view, _ := etcArgs(t, launcherWithCache(t, cache), Profile{}, t.TempDir())
	if view == "" {
		t.Fatal("no view was made")
	}
	for name, tamper := range map[string]func() error{
		"changed": func() error {
			return os.WriteFile(filepath.Join(view, "passwd"), []byte("root::0:0::/:/bin/sh\n"), 0o644)
		},
		"one file more":  func() error { return os.WriteFile(filepath.Join(view, "shadow"), []byte("x"), 0o644) },
		"group-writable": func() error { return os.Chmod(filepath.Join(view, "group"), 0o664) },
		"removed":        func() error { return os.Remove(filepath.Join(view, "nsswitch.conf")) },
	} {
		t.Run(name, func(t *testing.T) {
			if err := tamper(); err != nil {
				t.Fatal(err)
			}
			if viewMatches(view, filepath.Base(view)) {
				t.Fatal("a tampered view matches")
			}
			again, _ := etcArgs(t, launcherWithCache(t, cache), Profile{}, t.TempDir())
			if again != view {
				t.Fatalf("the fresh view is at %q, want %q", again, view)
			}
			entries, err := readView("/etc", etcRun, false)
			if err != nil {
				t.Fatal(err)
			}
			if sum := viewDigest(entries); !strings.HasPrefix(sum, filepath.Base(view)) || !viewMatches(view, sum) {
				t.Fatal("the view was not made again from the host's files")
			}
		})
	}
}

// TestEtcViewIsLeftOutWhereTheCallNeedsMore: with network allow (the name
// resolution files are read fresh), a call that shows something of its own
// under /etc, or no cache directory, every file is bound one by one: the
// same files, by the slower way.
func TestEtcViewIsLeftOutWhereTheCallNeedsMore(t *testing.T) {
	ws := t.TempDir()
	for name, c := range map[string]struct {
		cache string
		p     Profile
	}{
		"network allow":       {t.TempDir(), Profile{Network: Allow}},
		"a read path in /etc": {t.TempDir(), Profile{ReadPaths: []string{"/etc/ssl"}}},
		"no cache directory":  {"", Profile{}},
	} {
		t.Run(name, func(t *testing.T) {
			l := launcherWithCache(t, c.cache)
			view, files := etcArgs(t, l, c.p, ws)
			if view != "" || len(files) < len(etcRun)-1 {
				t.Fatalf("view %q, files %q", view, files)
			}
			if _, errOut, code, err := run(t, l, c.p, ws, `id -un`); err != nil || code != 0 {
				t.Fatalf("code %d, err %v, stderr %q", code, err, errOut)
			}
		})
	}
}
