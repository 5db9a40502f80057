package sandbox

import (
	"errors"
	"os"
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
