package fstools

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pabloagent/pablo/authority"
)

// repoFixture is a workspace that is a git work tree's root (its .git a
// directory with a hook), with a nested repository under vendor/lib.
func repoFixture(t *testing.T) (*Tools, string) {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{".git/hooks", "src", "vendor/lib/.git", "docs/.GIT"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	tools, err := New(Options{Workspace: ws, Write: true, Decide: allowAll, RepoWrite: true})
	if err != nil {
		t.Fatal(err)
	}
	return tools, dir
}

// TestRepoWriteWritesOnlyInTheWorkTree: under filesystem scope repo-write,
// fs.write creates a file in the work tree; a write into .git (at the top,
// nested, in another letter case, through a symlink or "..", or a .git
// file itself) is denied by builtin.repo_write.git_dir, one into a nested
// repository by builtin.repo_write.outside_repository, and one outside
// the workspace by builtin.workspace. Nothing denied reaches the disk.
func TestRepoWriteWritesOnlyInTheWorkTree(t *testing.T) {
	t.Parallel()
	tools, dir := repoFixture(t)
	if err := os.Symlink(".git", filepath.Join(dir, "meta")); err != nil {
		t.Fatal(err)
	}
	if _, err := tools.Write(bg(), WriteArgs{Path: "src/main.go", Text: "package main\n"}); err != nil {
		t.Fatalf("write in the work tree: %v", err)
	}
	for _, tc := range []struct{ path, rule string }{
		{".git/hooks/pre-commit", authority.RuleRepoGitDir},
		{".git/config", authority.RuleRepoGitDir},
		{"vendor/lib/.git/config", authority.RuleRepoGitDir},
		{"docs/.GIT/x", authority.RuleRepoGitDir},
		{"src/.git", authority.RuleRepoGitDir},
		{dir + "/.git/HEAD", authority.RuleRepoGitDir},
		{"meta/hooks/pre-commit", authority.RuleSymlink},
		{"src/../.git/config", authority.RuleWorkspace},
		{"vendor/lib/file.go", authority.RuleRepoOutside},
		{"../outside.txt", authority.RuleWorkspace},
		{"/tmp/outside.txt", authority.RuleWorkspace},
	} {
		_, err := tools.Write(bg(), WriteArgs{Path: tc.path, Text: "#!/bin/sh\n"})
		wantDenied(t, err, tc.rule)
	}
	for _, p := range []string{".git/hooks/pre-commit", ".git/config", "vendor/lib/file.go", "src/.git"} {
		if _, err := os.Lstat(filepath.Join(dir, p)); err == nil {
			t.Errorf("%s was written", p)
		}
	}
}

// TestRepoWriteNeedsARepository: repo-write over a workspace no
// repository holds, or inside a .git directory, fails to build with
// ErrNotInRepository saying what to change.
func TestRepoWriteNeedsARepository(t *testing.T) {
	t.Parallel()
	plain := t.TempDir()
	inGit := filepath.Join(t.TempDir(), ".git", "hooks")
	if err := os.MkdirAll(inGit, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{plain, inGit} {
		ws, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer ws.Close()
		_, err = New(Options{Workspace: ws, Write: true, Decide: allowAll, RepoWrite: true})
		if !errors.Is(err, ErrNotInRepository) {
			t.Errorf("New over %s: %v, want ErrNotInRepository", dir, err)
		}
	}
	// A workspace below a work tree's root is in that repository.
	sub := filepath.Join(t.TempDir(), "repo")
	if err := os.MkdirAll(filepath.Join(sub, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(sub, "pkg"), 0o755); err != nil {
		t.Fatal(err)
	}
	if root, err := RepositoryOf(filepath.Join(sub, "pkg")); err != nil || root != sub {
		t.Errorf("RepositoryOf(pkg) = %q, %v; want %q", root, err, sub)
	}
}

// TestKeepGitDirRefusesWritesIntoDotGit: under a deployment that uses
// network repository-host-only (KeepGitDir), whatever the scope, fs.write
// and fs.edit never write into a .git (its config names the remotes, the
// next task's allowlist), while the work tree stays writable; without it,
// workspace-write writes there.
func TestKeepGitDirRefusesWritesIntoDotGit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, ".git"), 0o755)
	cfg := "[remote \"origin\"]\n\turl = https://git.example.test/r.git\n"
	os.WriteFile(filepath.Join(dir, ".git", "config"), []byte(cfg), 0o644)
	ws, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	for _, keep := range []bool{true, false} {
		tools, err := New(Options{Workspace: ws, Write: true, Decide: allowAll, KeepGitDir: keep})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tools.Write(bg(), WriteArgs{Path: fmt.Sprintf("src-%v.txt", keep), Text: "x\n"}); err != nil {
			t.Fatalf("keep %v: write in the work tree: %v", keep, err)
		}
		_, err = tools.Write(bg(), WriteArgs{Path: ".git/config.new", Text: cfg})
		_, err2 := tools.Edit(bg(), EditArgs{Path: ".git/config", ExpectedRevision: strings.Repeat("0", 64), OldText: "git.example.test", NewText: "evil.example.test"})
		if !keep {
			if err != nil {
				t.Errorf("without KeepGitDir: %v, want written", err)
			}
			continue
		}
		wantDenied(t, err, authority.RuleRemotesGitDir)
		wantDenied(t, err2, authority.RuleRemotesGitDir)
		_, err = tools.Write(bg(), WriteArgs{Path: "sub/.Git", Text: "gitdir: ../evil\n"})
		wantDenied(t, err, authority.RuleRemotesGitDir)
		if _, err := os.Lstat(filepath.Join(dir, ".git", "config.new")); err == nil {
			t.Errorf("keep: .git/config.new was written")
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, ".git", "config")); string(b) != cfg {
		t.Errorf(".git/config changed: %q", b)
	}
}
