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
	a := l.args(p.Normalized(), Spec{Path: "/bin/true", Args: []string{"true"}, Workspace: ws, Dir: ws}, "", nil)
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

// fakeHost is a host /etc with every file etcRun names: files, a link
// into a system directory, a link read through, a directory of links.
func fakeHost(t *testing.T) string {
	t.Helper()
	host := t.TempDir()
	for _, f := range etcRun {
		p := filepath.Join(host, filepath.Base(f))
		var err error
		switch filepath.Base(f) {
		case "alternatives":
			if err = os.Mkdir(p, 0o755); err == nil {
				err = os.Symlink("/usr/bin/true", filepath.Join(p, "awk"))
			}
		case "localtime":
			err = os.Symlink("/usr/share/zoneinfo/Etc/UTC", p)
		case "nsswitch.conf":
			if err = os.WriteFile(filepath.Join(host, ".real-nsswitch"), []byte("passwd: files\n"), 0o644); err == nil {
				err = os.Symlink(filepath.Join(host, ".real-nsswitch"), p)
			}
		default:
			err = os.WriteFile(p, []byte(filepath.Base(f)+" content\n"), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return host
}

// TestEtcViewIsNeverShownStaleOrOpenToOthers: a host file changed since a
// view was made (rewritten, replaced by a rename, its link's target
// rewritten) names another view, made afresh with the new content; a view
// another user could write is never shown, and is made again in its place.
func TestEtcViewIsNeverShownStaleOrOpenToOthers(t *testing.T) {
	cache, host := t.TempDir(), fakeHost(t)
	view := makeView(cache, host)
	if view == "" {
		t.Fatal("no view was made")
	}
	if again := makeView(cache, host); again != view {
		t.Fatalf("an unchanged host names another view: %q, then %q", view, again)
	}
	if target, err := os.Readlink(filepath.Join(view, "localtime")); err != nil || target != "/usr/share/zoneinfo/Etc/UTC" {
		t.Fatalf("localtime: %q, %v: a link into a system directory stays a link", target, err)
	}
	if b, err := os.ReadFile(filepath.Join(view, "nsswitch.conf")); err != nil || string(b) != "passwd: files\n" {
		t.Fatalf("nsswitch.conf: %q, %v: a link elsewhere is read through", b, err)
	}
	changes := []struct {
		name   string
		change func() error
		file   string
		want   string
	}{
		{"rewritten", func() error { return os.WriteFile(filepath.Join(host, "passwd"), []byte("new passwd\n"), 0o644) }, "passwd", "new passwd\n"},
		{"renamed over", func() error {
			tmp := filepath.Join(host, ".group.new")
			if err := os.WriteFile(tmp, []byte("new group\n"), 0o644); err != nil {
				return err
			}
			return os.Rename(tmp, filepath.Join(host, "group"))
		}, "group", "new group\n"},
		{"link target rewritten", func() error {
			return os.WriteFile(filepath.Join(host, ".real-nsswitch"), []byte("passwd: files systemd\n"), 0o644)
		}, "nsswitch.conf", "passwd: files systemd\n"},
		{"a link added", func() error { return os.Symlink("/usr/bin/false", filepath.Join(host, "alternatives", "nawk")) }, "alternatives/nawk", ""},
	}
	seen := map[string]bool{view: true}
	for _, c := range changes {
		t.Run(c.name, func(t *testing.T) {
			if err := c.change(); err != nil {
				t.Fatal(err)
			}
			fresh := makeView(cache, host)
			if fresh == "" || seen[fresh] {
				t.Fatalf("after the change the view is %q (seen before: %v)", fresh, seen[fresh])
			}
			seen[fresh] = true
			if c.want == "" {
				if _, err := os.Lstat(filepath.Join(fresh, c.file)); err != nil {
					t.Fatal(err)
				}
				return
			}
			if b, err := os.ReadFile(filepath.Join(fresh, c.file)); err != nil || string(b) != c.want {
				t.Fatalf("%s in the fresh view: %q, %v", c.file, b, err)
			}
		})
	}
	t.Run("open to others", func(t *testing.T) {
		view := makeView(cache, host)
		for _, dir := range []string{filepath.Join(view, "alternatives"), view} {
			if err := os.Chmod(dir, 0o777); err != nil {
				t.Fatal(err)
			}
			if viewUsable(view) {
				t.Fatalf("a view with %s writable by all is usable", dir)
			}
			again := makeView(cache, host)
			if again != view || !viewUsable(again) {
				t.Fatalf("the view was not made again in place: %q", again)
			}
		}
	})
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
