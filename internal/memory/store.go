package memory

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"sync"

	"os"
	"path/filepath"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// Limits bound what one repository may cost. The zero value of a field
// takes its default.
type Limits struct {
	// MaxBlobBytes bounds one record or document (default 1 MiB). A larger
	// blob is skipped by the index and grep, and refused by read.
	MaxBlobBytes int64
	// MaxTreeDepth bounds the directory depth under a graph or docs path
	// (default 32).
	MaxTreeDepth int
	// MaxEntries bounds the tree entries one walk visits (default 200,000).
	MaxEntries int
	// MaxFrontmatterBytes bounds a record's frontmatter (default 16 KiB).
	MaxFrontmatterBytes int
	// MaxFrontmatterNodes bounds its YAML nodes (default 1,024).
	MaxFrontmatterNodes int
	// MaxFrontmatterDepth bounds its nesting (default 8).
	MaxFrontmatterDepth int
}

func (l Limits) withDefaults() Limits {
	if l.MaxBlobBytes <= 0 {
		l.MaxBlobBytes = 1 << 20
	}
	if l.MaxTreeDepth <= 0 {
		l.MaxTreeDepth = 32
	}
	if l.MaxEntries <= 0 {
		l.MaxEntries = 200_000
	}
	if l.MaxFrontmatterBytes <= 0 {
		l.MaxFrontmatterBytes = 16 << 10
	}
	if l.MaxFrontmatterNodes <= 0 {
		l.MaxFrontmatterNodes = 1024
	}
	if l.MaxFrontmatterDepth <= 0 {
		l.MaxFrontmatterDepth = 8
	}
	return l
}

// Options configure a Store.
type Options struct {
	// GraphPaths are the repository directories holding records
	// ("records/"); DocsPaths those holding free-form Markdown.
	GraphPaths []string
	DocsPaths  []string
	Limits     Limits
	// Cache, when set, shares built indexes with other stores (and tasks)
	// reading the same repository; nil gives the store its own.
	Cache *Cache
}

// Store reads one memory repository, always at a commit and never in its
// work tree. It is safe for concurrent use.
type Store struct {
	dir    string
	repo   *filesystem.Storage
	graph  []string
	docs   []string
	limits Limits
	cache  *Cache

	// mu serialises object reads: go-git's filesystem storage shares
	// pack file handles between readers.
	mu sync.Mutex
}

// Pin is a ref resolved to one commit: every read of a task happens at it.
type Pin struct {
	Ref    string `json:"ref"`
	Commit string `json:"commit"`
}

// Open opens the git repository at dir (a work tree with .git, or a bare
// repository) without reading its work tree.
func Open(dir string, opts Options) (*Store, error) {
	graph, err := cleanPrefixes("graph path", opts.GraphPaths)
	if err != nil {
		return nil, err
	}
	docs, err := cleanPrefixes("docs path", opts.DocsPaths)
	if err != nil {
		return nil, err
	}
	repo, err := openStorage(dir)
	if err != nil {
		e := errorf(ErrRepository, CodeNotRepository, "", 0, "%s is not a git repository; point options.memory.repository at a repository's top directory (with .git) or a bare repository", dir)
		e.Err = err
		return nil, e
	}
	cache := opts.Cache
	if cache == nil {
		cache = NewCache(4)
	}
	return &Store{dir: dir, repo: repo, graph: graph, docs: docs, limits: opts.Limits.withDefaults(), cache: cache}, nil
}

// cleanPrefixes turns configured directories into "dir/" prefixes ("" for
// the whole tree), refusing absolute paths and "..".
func cleanPrefixes(what string, in []string) ([]string, error) {
	out := make([]string, 0, len(in))
	for _, p := range in {
		c, err := cleanRepoPath(p)
		if err != nil {
			return nil, errorf(ErrInvalidArguments, CodeBadPath, "", 0, "%s %q: %v", what, p, err)
		}
		if c != "" {
			c += "/"
		}
		out = append(out, c)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// cleanRepoPath cleans a slash-separated repository path; "" and "." are
// the top.
func cleanRepoPath(p string) (string, error) {
	if strings.HasPrefix(p, "/") || strings.Contains(p, "\\") {
		return "", fmt.Errorf("must be a relative slash-separated path")
	}
	c := path.Clean("/" + p)[1:]
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			return "", fmt.Errorf("must not contain a \"..\" segment")
		}
	}
	return c, nil
}

// Resolve turns ref (a full ref name such as "refs/heads/main", "HEAD", or
// a full commit ID) into a Pin. Annotated tags are peeled to their commit.
func (s *Store) Resolve(ref string) (Pin, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var h plumbing.Hash
	switch {
	case plumbing.IsHash(ref):
		h = plumbing.NewHash(ref)
	default:
		r, err := storer.ResolveReference(s.repo, plumbing.ReferenceName(ref))
		if err != nil {
			e := errorf(ErrRef, CodeRefNotFound, "", 0, "ref %q does not exist in the memory repository; name a full ref such as refs/heads/main", ref)
			e.Err = err
			return Pin{}, e
		}
		h = r.Hash()
	}
	c, err := s.peel(h)
	if err != nil {
		return Pin{}, errorf(ErrRef, CodeRefNotCommit, "", 0, "ref %q does not name a commit", ref)
	}
	return Pin{Ref: ref, Commit: c.Hash.String()}, nil
}

func (s *Store) peel(h plumbing.Hash) (*object.Commit, error) {
	for range 8 {
		obj, err := object.GetObject(s.repo, h)
		if err != nil {
			return nil, err
		}
		switch o := obj.(type) {
		case *object.Commit:
			return o, nil
		case *object.Tag:
			h = o.Target
		default:
			return nil, fmt.Errorf("not a commit")
		}
	}
	return nil, fmt.Errorf("tag chain too long")
}

// tree returns the root tree of commit; the caller holds s.mu.
func (s *Store) tree(commit string) (*object.Tree, error) {
	if !plumbing.IsHash(commit) {
		return nil, errorf(ErrRef, CodeRefNotFound, "", 0, "%q is not a commit ID", commit)
	}
	c, err := object.GetCommit(s.repo, plumbing.NewHash(commit))
	if err != nil {
		e := errorf(ErrRef, CodeRefNotCommit, "", 0, "commit %s is not in the memory repository", commit)
		e.Err = err
		return nil, e
	}
	t, err := c.Tree()
	if err != nil {
		e := errorf(ErrRepository, CodeObjectUnreadable, "", 0, "the tree of commit %s cannot be read", commit)
		e.Err = err
		return nil, e
	}
	return t, nil
}

// file is one regular file of a walk.
type file struct {
	Path string
	Hash plumbing.Hash
}

// Problem is an entry a walk or the index skipped, and why.
type Problem struct {
	Path   string `json:"path"`
	Code   Code   `json:"code"`
	Reason string `json:"reason"`
}

// walk lists the regular files under prefixes of the tree of commit, in
// path order, bounded in depth and entries. Symlinks, submodules, blobs
// over the size bound and directories past the depth bound become
// problems, never reads. The caller holds s.mu.
func (s *Store) walk(ctx context.Context, root *object.Tree, prefixes []string) ([]file, []Problem, error) {
	var files []file
	var problems []Problem
	entries := 0
	var visit func(t *object.Tree, dir string, depth int) error
	visit = func(t *object.Tree, dir string, depth int) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		for _, e := range t.Entries {
			entries++
			if entries > s.limits.MaxEntries {
				return errorf(ErrLimitExceeded, CodeTooManyEntries, dir, 0, "more than %d tree entries under the configured paths; narrow graph_paths or docs_paths", s.limits.MaxEntries)
			}
			p := dir + e.Name
			switch e.Mode {
			case filemode.Dir:
				if depth+1 > s.limits.MaxTreeDepth {
					problems = append(problems, Problem{p, CodeTreeTooDeep, fmt.Sprintf("directory deeper than %d levels; not read", s.limits.MaxTreeDepth)})
					continue
				}
				sub, err := object.GetTree(s.repo, e.Hash)
				if err != nil {
					return unreadable(p, err)
				}
				if err := visit(sub, p+"/", depth+1); err != nil {
					return err
				}
			case filemode.Regular, filemode.Executable, filemode.Deprecated:
				files = append(files, file{Path: p, Hash: e.Hash})
			case filemode.Symlink:
				problems = append(problems, Problem{p, CodeSymlink, "a symlink; memory reads only regular files"})
			case filemode.Submodule:
				problems = append(problems, Problem{p, CodeSubmodule, "a submodule; memory reads only regular files"})
			}
		}
		return nil
	}
	for _, pre := range prefixes {
		t := root
		dir := strings.TrimSuffix(pre, "/")
		if dir != "" {
			sub, err := root.Tree(dir)
			if errors.Is(err, object.ErrDirectoryNotFound) || errors.Is(err, object.ErrEntryNotFound) {
				continue
			}
			if err != nil {
				return nil, nil, unreadable(dir, err)
			}
			t = sub
		}
		if err := visit(t, pre, strings.Count(pre, "/")); err != nil {
			return nil, nil, err
		}
	}
	slices.SortFunc(files, func(a, b file) int { return strings.Compare(a.Path, b.Path) })
	files = slices.CompactFunc(files, func(a, b file) bool { return a.Path == b.Path })
	return files, problems, nil
}

func unreadable(p string, err error) *Error {
	e := errorf(ErrRepository, CodeObjectUnreadable, p, 0, "object cannot be read; the memory repository may be corrupt or shallow")
	e.Err = err
	return e
}

// blob reads a blob whole, refusing one over the size bound before reading
// it. The caller holds s.mu.
func (s *Store) blob(p string, h plumbing.Hash) ([]byte, error) {
	obj, err := s.repo.EncodedObject(plumbing.BlobObject, h)
	if err != nil {
		return nil, unreadable(p, err)
	}
	if obj.Size() > s.limits.MaxBlobBytes {
		return nil, errorf(ErrLimitExceeded, CodeBlobTooLarge, p, 0, "%d bytes, over the %d-byte bound; not read", obj.Size(), s.limits.MaxBlobBytes)
	}
	r, err := obj.Reader()
	if err != nil {
		return nil, unreadable(p, err)
	}
	defer r.Close()
	b, err := io.ReadAll(io.LimitReader(r, s.limits.MaxBlobBytes+1))
	if err != nil {
		return nil, unreadable(p, err)
	}
	if int64(len(b)) > s.limits.MaxBlobBytes {
		return nil, errorf(ErrLimitExceeded, CodeBlobTooLarge, p, 0, "over the %d-byte bound; not read", s.limits.MaxBlobBytes)
	}
	return b, nil
}

// entryAt finds path in the tree of commit as a regular file. The caller
// holds s.mu.
func (s *Store) entryAt(root *object.Tree, p string) (file, error) {
	e, err := root.FindEntry(p)
	if err != nil {
		return file{}, errorf(ErrNotFound, CodeNotFound, p, 0, "no such file at the pinned commit")
	}
	switch e.Mode {
	case filemode.Regular, filemode.Executable, filemode.Deprecated:
		return file{Path: p, Hash: e.Hash}, nil
	case filemode.Symlink:
		return file{}, errorf(ErrUnsafeEntry, CodeSymlink, p, 0, "a symlink; memory reads only regular files")
	case filemode.Submodule:
		return file{}, errorf(ErrUnsafeEntry, CodeSubmodule, p, 0, "a submodule; memory reads only regular files")
	}
	return file{}, errorf(ErrNotFound, CodeNotFound, p, 0, "not a file at the pinned commit")
}

// under reports whether p lies under one of prefixes.
func under(p string, prefixes []string) bool {
	for _, pre := range prefixes {
		if strings.HasPrefix(p, pre) {
			return true
		}
	}
	return false
}

// openStorage opens the object and ref storage of the repository at dir:
// dir/.git when it is a directory, else dir itself when it is a bare
// repository. Only go-git's storage and object packages are linked: none
// of its transports, so reading memory can never fetch or push.
func openStorage(dir string) (*filesystem.Storage, error) {
	gitDir := filepath.Join(dir, ".git")
	if fi, err := os.Stat(gitDir); err != nil || !fi.IsDir() {
		gitDir = dir
	}
	for _, need := range []string{"HEAD", "objects", "refs"} {
		if _, err := os.Stat(filepath.Join(gitDir, need)); err != nil {
			return nil, fmt.Errorf("no %s in %s", need, gitDir)
		}
	}
	return filesystem.NewStorage(osfs.New(gitDir), cache.NewObjectLRUDefault()), nil
}
