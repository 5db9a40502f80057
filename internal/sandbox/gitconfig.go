package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pabloagent/pablo/internal/egress"
)

// gitConfigBinds opens what a workspace-write command under
// Profile.KeepGitConfig binds by descriptor: each file of the repository
// holding workspace that says where its remotes are (see gitConfigFiles)
// and lies in the workspace, read-only, and each directory on the way to
// it, onto itself, parents first, so that none of them can be moved aside
// and replaced (a mount point cannot be renamed or removed). A file that
// is not there binds nothing.
func gitConfigBinds(workspace string) []fdBind {
	var out []fdBind
	seen := map[string]bool{}
	for _, rel := range gitConfigFiles(workspace) {
		chain, err := openFileBeneath(workspace, rel)
		if err != nil {
			continue
		}
		out = appendChain(out, seen, chain)
	}
	slices.SortStableFunc(out, func(a, b fdBind) int { return strings.Count(a.dest, "/") - strings.Count(b.dest, "/") })
	return out
}

// gitConfigFiles are the files, as slash paths relative to workspace and
// beneath it, from which the remotes of the repository holding workspace
// are read (egress.RepositoryHosts): a .git file naming the git
// directory, the git directory's config, config.worktree and commondir,
// and the common directory's config. Those outside the workspace are not
// the command's to write anyway.
func gitConfigFiles(workspace string) []string {
	root := egress.RepositoryRoot(workspace)
	gitDir, commonDir, err := egress.GitDirs(root)
	if err != nil {
		return nil
	}
	cands := []string{filepath.Join(root, ".git")}
	for _, d := range []string{gitDir, commonDir} {
		cands = append(cands, filepath.Join(d, "config"), filepath.Join(d, "config.worktree"), filepath.Join(d, "commondir"))
	}
	var out []string
	for _, c := range cands {
		c = filepath.Clean(c)
		if c == workspace || !within(workspace, c) {
			continue
		}
		if fi, err := os.Lstat(c); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		rel, err := filepath.Rel(workspace, c)
		if err != nil || slices.Contains(out, filepath.ToSlash(rel)) {
			continue
		}
		out = append(out, filepath.ToSlash(rel))
	}
	return out
}
