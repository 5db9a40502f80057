package skills

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/filesystem/dotgit"
)

// A package may come from a git ref (options.skills.packages NAME.git): a
// tag, branch or full commit hash of a local repository (a work tree, a
// linked work tree, a directory whose .git file names its git directory,
// or a bare repository; a path or a file:// URL), optionally a
// subdirectory of its tree. The tree at the resolved commit is read from the repository's
// objects in memory: nothing is checked out, and only go-git's storage and
// object packages are linked, none of its transports, so reading a package
// can never fetch. A remote URL is refused (ErrInvalidOptions): clone or
// mirror the repository and name the directory. Its digest is
// PackageDigest's over the tree (the value PackageDigest gives for a
// checkout of that directory), and the resolved commit is recorded in the
// Skill's Source.

// CodeRefUnresolved: a package's git ref names no commit of its
// repository.
const CodeRefUnresolved Code = "ref_unresolved"

// ErrRefUnresolved reports a git ref that names no commit.
var ErrRefUnresolved = errors.New("skills: git ref does not resolve")

// GitSource is a package read from a git repository at a ref.
type GitSource struct {
	// Repo is the local repository: an absolute path or a file:// URL.
	Repo string `json:"repo"`
	// Ref is a tag, a branch or a full commit hash.
	Ref string `json:"ref"`
	// Subdir is the package's directory in the tree, '/'-separated; empty
	// for the tree's root.
	Subdir string `json:"subdir,omitempty"`
}

// gitRepoPath returns the local directory of repo: an absolute path as
// given, or a file:// URL's path. Any other URL is refused.
func gitRepoPath(repo string) (string, error) {
	if strings.Contains(repo, "://") || strings.HasPrefix(repo, "git@") {
		u, err := url.Parse(repo)
		if err != nil || u.Scheme != "file" || (u.Host != "" && u.Host != "localhost") {
			q := repo
			if len(q) > 200 {
				q = q[:200]
			}
			return "", &Error{Kind: ErrInvalidOptions, Code: CodeInvalidPath,
				Reason: fmt.Sprintf("repository %s is remote; only a local repository (a path or a file:// URL) is read: clone or mirror it and name the directory", strconv.Quote(q))}
		}
		repo = u.Path
	}
	return repo, nil
}

// maxGitPointerBytes bounds a `.git` file and a `commondir` file: each
// holds one path.
const maxGitPointerBytes = 4096

// gitMissing is the source_missing error of a repository that cannot be
// opened.
func gitMissing(reason string, err error) error {
	return &Error{Kind: ErrNotFound, Code: CodeSourceMissing, Reason: reason, Err: err}
}

// readGitPointer reads a small file holding one path (a `.git` file's
// "gitdir: PATH" line, a `commondir` file's PATH) and returns the path,
// made absolute against base when relative.
func readGitPointer(file, prefix, base string) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxGitPointerBytes+1))
	if err != nil {
		return "", err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	p, ok := strings.CutPrefix(line, prefix)
	p = strings.TrimSpace(p)
	if len(b) > maxGitPointerBytes || !ok || p == "" {
		return "", fmt.Errorf("%s does not hold one %spath line", file, prefix)
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(base, p)
	}
	return filepath.Clean(p), nil
}

// openGitStorage opens the object and ref storage of a repository whose
// git and common directories gitDirs found. git finds them at dir/.git when it is a directory; the directory a
// `.git` file names ("gitdir: PATH", relative to dir), as a linked work
// tree or a separate git directory has; else dir itself when bare. A git
// directory with a `commondir` file (a linked work tree's) keeps its own
// HEAD and takes objects, refs and packed-refs from the common directory,
// as go-git's dotgit.RepositoryFilesystem lays them out. Only files are
// read: nothing is fetched.
func openGitStorage(gitDir, common string) *filesystem.Storage {
	var fs billy.Filesystem = osfs.New(gitDir)
	if common != gitDir {
		fs = dotgit.NewRepositoryFilesystem(fs, osfs.New(common))
	}
	return filesystem.NewStorage(fs, cache.NewObjectLRUDefault())
}

// gitDirs returns the git directory of the repository at dir (its .git
// directory, the one a .git file names, or dir itself when it is bare) and
// its common directory, where objects and refs live: the one a commondir
// file names in a linked work tree's git directory, else the git
// directory itself.
func gitDirs(dir string) (gitDir, common string, err error) {
	gitDir = filepath.Join(dir, ".git")
	fi, err := os.Stat(gitDir)
	switch {
	case err == nil && fi.Mode().IsRegular():
		if gitDir, err = readGitPointer(gitDir, "gitdir: ", dir); err != nil {
			return "", "", gitMissing("the repository's .git file does not name a git directory (want a \"gitdir: PATH\" line)", err)
		}
	case err != nil || !fi.IsDir():
		gitDir = dir
	}
	common = gitDir
	if _, err := os.Stat(filepath.Join(gitDir, "commondir")); err == nil {
		if common, err = readGitPointer(filepath.Join(gitDir, "commondir"), "", gitDir); err != nil {
			return "", "", gitMissing("the git directory's commondir file does not name a directory", err)
		}
	}
	for _, need := range []string{filepath.Join(gitDir, "HEAD"), filepath.Join(common, "objects"), filepath.Join(common, "refs")} {
		if _, err := os.Stat(need); err != nil {
			return "", "", gitMissing("the repository does not exist or is not a git repository", err)
		}
	}
	return gitDir, common, nil
}

// resolveGitRef resolves ref to a commit: a full commit hash as given, else
// refs/tags/REF, refs/heads/REF or the full ref name REF, annotated tags
// peeled.
func resolveGitRef(st *filesystem.Storage, ref string) (*object.Commit, error) {
	unresolved := func(cause error) error {
		return &Error{Kind: ErrRefUnresolved, Code: CodeRefUnresolved,
			Reason: fmt.Sprintf("ref %s names no commit of the repository; name a tag, a branch or a full commit hash", strconv.Quote(ref)), Err: cause}
	}
	var h plumbing.Hash
	if plumbing.IsHash(ref) {
		h = plumbing.NewHash(ref)
	} else {
		var err error = plumbing.ErrReferenceNotFound
		for _, name := range []string{"refs/tags/" + ref, "refs/heads/" + ref, ref} {
			var r *plumbing.Reference
			if r, err = storer.ResolveReference(st, plumbing.ReferenceName(name)); err == nil {
				h = r.Hash()
				break
			}
		}
		if err != nil {
			return nil, unresolved(err)
		}
	}
	for range 8 {
		obj, err := object.GetObject(st, h)
		if err != nil {
			return nil, unresolved(err)
		}
		switch o := obj.(type) {
		case *object.Commit:
			return o, nil
		case *object.Tag:
			h = o.Target
		default:
			return nil, unresolved(nil)
		}
	}
	return nil, unresolved(errors.New("tag chain too long"))
}

// readGitPackage reads the package at g's ref into a tree and returns it
// with the resolved commit hash. within, when not nil, must admit the
// repository's git and common directories.
func readGitPackage(ctx context.Context, g GitSource, within func(dir string) bool) (*tree, string, error) {
	dir, err := gitRepoPath(g.Repo)
	if err != nil {
		return nil, "", err
	}
	gitDir, common, err := gitDirs(dir)
	if err != nil {
		return nil, "", err
	}
	// A .git file or a commondir may name a git directory elsewhere: what
	// is read must lie in the allowed roots too, not only the work tree.
	for _, d := range []string{gitDir, common} {
		if within != nil && !within(d) {
			return nil, "", &Error{Kind: ErrNotFound, Code: CodeRootDenied,
				Reason: "the repository's git directory " + strconv.Quote(d) + " lies outside every physical skill root the authority layers allow; add it to authority skill_roots or keep the repository's .git inside them"}
		}
	}
	st := openGitStorage(gitDir, common)
	defer st.Close()
	commit, err := resolveGitRef(st, g.Ref)
	if err != nil {
		return nil, "", err
	}
	root, err := commit.Tree()
	if err != nil {
		return nil, "", invalidPackage("the commit's tree cannot be read", err)
	}
	if g.Subdir != "" {
		if reason := checkResourcePath(g.Subdir); reason != "" {
			return nil, "", &Error{Kind: ErrInvalidOptions, Code: CodeInvalidPath, Reason: "subdir: " + reason}
		}
		if root, err = root.Tree(g.Subdir); err != nil {
			return nil, "", &Error{Kind: ErrNotFound, Code: CodeSourceMissing,
				Reason: fmt.Sprintf("the tree of commit %s has no directory %s", commit.Hash, strconv.Quote(g.Subdir)), Err: err}
		}
	}
	b := newTreeBuilder(-1)
	if err := b.walkGitTree(ctx, st, root, ""); err != nil {
		return nil, "", err
	}
	if _, ok := b.t.files[SkillFile]; !ok {
		return nil, "", &Error{Kind: ErrInvalidPackage, Code: CodeMissingSkillFile,
			Reason: fmt.Sprintf("the package directory at commit %s holds no SKILL.md", commit.Hash)}
	}
	return &b.t, commit.Hash.String(), nil
}

// walkGitTree adds t's entries under prefix. Each entry's name is checked
// as one path component: a crafted tree cannot name '..' or hold a '/'.
func (b *treeBuilder) walkGitTree(ctx context.Context, st *filesystem.Storage, t *object.Tree, prefix string) error {
	for _, e := range t.Entries {
		if err := ctx.Err(); err != nil {
			return stopped(err)
		}
		if err := b.count(); err != nil {
			return err
		}
		name := prefix + e.Name
		if strings.Contains(e.Name, "/") {
			return unsafeEntry(name, "the tree entry's name holds '/'")
		}
		p, err := entryPath(name)
		if err != nil {
			return err
		}
		if p != name {
			return unsafeEntry(name, "the tree entry's name is empty or '.'")
		}
		switch e.Mode {
		case filemode.Dir:
			sub, err := object.GetTree(st, e.Hash)
			if err != nil {
				return invalidPackage(fmt.Sprintf("the tree %s cannot be read", quotePath(name)), err)
			}
			if err := b.dir(name); err != nil {
				return err
			}
			if err := b.walkGitTree(ctx, st, sub, name+"/"); err != nil {
				return err
			}
			continue
		case filemode.Regular, filemode.Executable:
		case filemode.Symlink:
			return unsafeEntry(name, "the entry is a symlink; a package holds only directories and regular files")
		case filemode.Submodule:
			return unsafeEntry(name, "the entry is a submodule; a package holds only directories and regular files")
		default:
			return unsafeEntry(name, "the entry is not a directory or regular file")
		}
		blob, err := object.GetBlob(st, e.Hash)
		if err != nil {
			return invalidPackage(fmt.Sprintf("the file %s cannot be read", quotePath(name)), err)
		}
		if blob.Size > MaxPackageFileBytes {
			return &Error{Kind: ErrLimitExceeded, Code: CodeTooLarge, Path: quotePath(name),
				Reason: fmt.Sprintf("the file has %d bytes; a package file holds at most %d", blob.Size, MaxPackageFileBytes)}
		}
		if err := b.charge(blob.Size); err != nil {
			return err
		}
		r, err := blob.Reader()
		if err != nil {
			return invalidPackage(fmt.Sprintf("the file %s cannot be read", quotePath(name)), err)
		}
		data, err := io.ReadAll(io.LimitReader(r, blob.Size+1))
		r.Close()
		if err != nil || int64(len(data)) != blob.Size {
			return invalidPackage(fmt.Sprintf("the file %s is corrupt", quotePath(name)), err)
		}
		if err := b.file(name, data); err != nil {
			return err
		}
	}
	return nil
}
