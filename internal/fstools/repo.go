package fstools

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/pabloagent/pablo/authority"
)

// ErrNotInRepository is the kind of a repo-write workspace that no git
// repository's work tree holds.
var ErrNotInRepository = errors.New("fstools: the workspace is in no git repository's work tree")

// RepositoryOf finds the git repository whose work tree holds dir (clean,
// absolute, real): the directory that has the nearest .git (a directory,
// or the file a worktree or submodule has) at or above dir. A dir inside a
// .git directory, or in no repository, is an error wrapping
// ErrNotInRepository that says what to change.
func RepositoryOf(dir string) (string, error) {
	for _, c := range strings.Split(dir, "/") {
		if isGitName(c) {
			return "", fmt.Errorf("%w: %s lies inside a .git directory; bind the work tree instead, or use filesystem scope \"workspace-write\"", ErrNotInRepository, dir)
		}
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d, nil
		}
		if d == "/" || d == "." {
			return "", fmt.Errorf("%w: no .git in %s or above it; bind a directory of a git work tree, or use filesystem scope \"workspace-write\"", ErrNotInRepository, dir)
		}
	}
}

// isGitName reports a path component git reads as its own directory:
// ".git" in any letter case (case-insensitive file systems fold it).
func isGitName(c string) bool { return strings.EqualFold(c, ".git") }

// repoCheck is the repo-write rule on the path of a write: no component is
// a .git, at any depth (hooks, config and refs are never the task's to
// write). Symbolic links are never followed and ".." is refused before
// this, so the components are the path itself.
//
// Under KeepGitDir the same holds whatever the scope: the remotes a
// repository's config names are the next task's repository-host-only
// allowlist.
func (c *call) repoCheck(rel string, parts []string) error {
	if !c.t.repoWrite && !c.t.keepGitDir {
		return nil
	}
	for _, p := range parts {
		if isGitName(p) && !c.t.repoWrite {
			return &DeniedError{Tool: c.id, Path: rel, Decision: builtinDenial(authority.RuleRemotesGitDir,
				"this deployment uses network repository-host-only, whose allowlist is the remotes a repository's .git config names: the workspace tools never write into a .git")}
		}
		if isGitName(p) {
			return &DeniedError{Tool: c.id, Path: rel, Decision: builtinDenial(authority.RuleRepoGitDir,
				"filesystem scope repo-write never writes into a repository's .git (hooks, config, refs); write in the work tree")}
		}
	}
	return nil
}

// nestedRepo is the repo-write rule on each directory a write passes: one
// that holds a .git is the root of another repository, nested in the
// workspace's, whose work tree is not the one repo-write grants.
func (c *call) nestedRepo(dir *os.Root, rel, at string) error {
	if _, err := dir.Lstat(".git"); err == nil {
		return &DeniedError{Tool: c.id, Path: rel, Decision: builtinDenial(authority.RuleRepoOutside,
			fmt.Sprintf("filesystem scope repo-write writes only in the work tree of the repository holding the workspace; %s is another repository (it has a .git)", at))}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return c.ioErr(rel, err)
	}
	return nil
}
