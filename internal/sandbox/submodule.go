package sandbox

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
)

// gitlinks lists the submodules of the repository whose work tree holds
// workspace that lie inside workspace, as slash-separated paths relative
// to it: the gitlink entries of the repository's index. The index is in
// that repository's git directory, which the command cannot write under
// repo-write (read-only when the workspace holds it, unseen when it lies
// above), so the command cannot hide a submodule from this list as it
// could from .gitmodules. An index that cannot be read lists none.
func gitlinks(workspace string) []string {
	root, dotgit := "", ""
	for dir := workspace; ; dir = filepath.Dir(dir) {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			root, dotgit = dir, filepath.Join(dir, ".git")
			break
		}
		if dir == "/" || dir == "." {
			return nil
		}
	}
	gitDir := dotgit
	if fi, err := os.Stat(dotgit); err != nil {
		return nil
	} else if !fi.IsDir() {
		// A linked work tree's or a submodule's .git file: "gitdir: DIR".
		b, err := os.ReadFile(dotgit)
		d, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
		if err != nil || !ok {
			return nil
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(root, d)
		}
		gitDir = d
	}
	f, err := os.Open(filepath.Join(gitDir, "index"))
	if err != nil {
		return nil
	}
	defer f.Close()
	var idx index.Index
	if err := index.NewDecoder(bufio.NewReader(f)).Decode(&idx); err != nil {
		return nil
	}
	var out []string
	for _, e := range idx.Entries {
		if e.Mode != filemode.Submodule || e.SkipWorktree {
			// A sparse checkout's skipped entry: git looks at none.
			continue
		}
		rel, err := filepath.Rel(workspace, filepath.Join(root, filepath.FromSlash(e.Name)))
		if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
			continue
		}
		out = append(out, filepath.ToSlash(rel))
	}
	return out
}
