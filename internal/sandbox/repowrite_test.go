package sandbox

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRepoWriteWritesTheWorkTreeButNeitherGitNorOutside: under repo-write
// a command writes the repository's work tree, and a write into .git and
// one outside the repository are each refused.
func TestRepoWriteWritesTheWorkTreeButNeitherGitNorOutside(t *testing.T) {
	t.Parallel()
	l := needBwrap(t)
	root := t.TempDir()
	repo, outside := filepath.Join(root, "repo"), filepath.Join(root, "outside")
	for _, d := range []string{filepath.Join(repo, ".git", "hooks"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(repo, ".git", "config"), []byte("[core]\n"), 0o644)
	for _, c := range []struct {
		name, script string
		allowed      bool
	}{
		{"work tree", "echo x > tracked.txt", true},
		{".git/config", "echo '[alias] x = !sh' >> .git/config", false},
		{".git/hooks", "echo '#!/bin/sh' > .git/hooks/pre-commit", false},
		{"outside", "echo x > " + filepath.Join(outside, "escaped"), false},
	} {
		_, stderr, code, err := run(t, l, Profile{Filesystem: RepoWrite}, repo, c.script)
		if err != nil {
			t.Fatal(err)
		}
		if (code == 0) != c.allowed {
			t.Errorf("%s: exit %d (stderr %q), want allowed %v", c.name, code, stderr, c.allowed)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(repo, ".git", "config")); string(b) != "[core]\n" {
		t.Errorf(".git/config changed: %q", b)
	}
	for _, p := range []string{filepath.Join(repo, ".git", "hooks", "pre-commit"), filepath.Join(outside, "escaped")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s was written", p)
		}
	}
}

func TestRepoWriteNeedsAWorkspaceInARepository(t *testing.T) {
	t.Parallel()
	l := needBwrap(t)
	ws := t.TempDir()
	_, err := l.Command(Profile{Filesystem: RepoWrite}, Spec{Path: "/bin/true", Args: []string{"true"}, Workspace: ws})
	if !errors.Is(err, ErrInvalidProfile) || !strings.Contains(err.Error(), "no git repository") {
		t.Fatalf("err %v, want ErrInvalidProfile saying no repository holds it", err)
	}
}

// TestRepoWriteKeepsASubmoduleReadOnly: a submodule is another
// repository. Its .git file, which says where its git directory is, is
// the command's to rewrite otherwise: pointed at a directory the command
// writes, with a core.fsmonitor of its own, it would run that command on
// the host at the next `git status`, which looks into every populated
// submodule. Under repo-write the submodule's directory is read-only,
// like its .git, as the workspace tools hold it (another repository); a
// submodule whose directory is missing, or is a symbolic link the command
// could replace with a directory of its own, refuses the command, naming
// it; a symbolic link is never followed to bind what lies behind it.
func TestRepoWriteKeepsASubmoduleReadOnly(t *testing.T) {
	t.Parallel()
	l := needBwrap(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	root := t.TempDir()
	repo, secret := filepath.Join(root, "repo"), filepath.Join(root, "secret")
	os.MkdirAll(secret, 0o755)
	os.WriteFile(filepath.Join(secret, "key"), []byte("host secret"), 0o644)
	git := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "protocol.file.allow=always"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	sub := filepath.Join(root, "subsrc")
	os.MkdirAll(sub, 0o755)
	git(sub, "init", "-q")
	os.WriteFile(filepath.Join(sub, "f"), []byte("f"), 0o644)
	git(sub, "add", "f")
	git(sub, "commit", "-qm", "f")
	os.MkdirAll(repo, 0o755)
	git(repo, "init", "-q")
	git(repo, "submodule", "add", "-q", sub, "vendor/sub")
	git(repo, "commit", "-qm", "sub")
	gitfile, _ := os.ReadFile(filepath.Join(repo, "vendor", "sub", ".git"))
	for _, c := range []struct {
		name, script string
		allowed      bool
	}{
		{"work tree", "echo x > tracked.txt", true},
		{"the submodule's .git file", "printf 'gitdir: ../../evil\\n' > vendor/sub/.git", false},
		{"the submodule's work tree", "echo x > vendor/sub/f", false},
		{"a submodule's parent moved aside", "mv vendor moved && mkdir -p vendor/sub && printf 'gitdir: ../../evil\\n' > vendor/sub/.git", false},
	} {
		stdout, stderr, code, err := run(t, l, Profile{Filesystem: RepoWrite}, repo, c.script)
		if err != nil {
			t.Fatal(err)
		}
		if (code == 0) != c.allowed || strings.Contains(stdout, "host secret") {
			t.Errorf("%s: exit %d (stdout %q, stderr %q), want allowed %v and no host secret", c.name, code, stdout, stderr, c.allowed)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "vendor", "sub", ".git")); string(b) != string(gitfile) {
		t.Errorf("the submodule's .git changed: %q", b)
	}

	// A gitlink whose directory is a link to a host directory, then one
	// with no directory at all.
	git(repo, "update-index", "--add", "--cacheinfo", "160000,"+strings.Repeat("a", 40)+",linked")
	if err := os.Symlink(secret, filepath.Join(repo, "linked")); err != nil {
		t.Fatal(err)
	}
	git(repo, "update-index", "--add", "--cacheinfo", "160000,"+strings.Repeat("b", 40)+",gone/sub")
	for _, name := range []string{"linked", "gone/sub"} {
		_, err := l.Command(Profile{Filesystem: RepoWrite}, Spec{Path: "/bin/true", Args: []string{"true"}, Workspace: repo})
		if !errors.Is(err, ErrInvalidProfile) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v, want ErrInvalidProfile naming the submodule", name, err)
		}
		os.Remove(filepath.Join(repo, "linked"))
		git(repo, "update-index", "--force-remove", "linked")
	}
	// Once each submodule has its directory, commands run again.
	os.MkdirAll(filepath.Join(repo, "gone", "sub"), 0o755)
	if _, _, code, err := run(t, l, Profile{Filesystem: RepoWrite}, repo, "echo x > tracked.txt"); err != nil || code != 0 {
		t.Errorf("with every submodule's directory: exit %d, %v", code, err)
	}
}
