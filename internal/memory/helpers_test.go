package memory

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// testRepo is a git repository written in the test with go-git, object by
// object, so that a test can store what no work tree would hold (symlinks,
// deep trees, huge blobs) without touching the filesystem beyond .git.
type testRepo struct {
	tb    testing.TB
	dir   string
	repo  *git.Repository
	blobs map[string]plumbing.Hash
	head  plumbing.Hash
	n     int
}

type tfile struct {
	mode filemode.FileMode
	data string
}

func newTestRepo(tb testing.TB) *testRepo {
	tb.Helper()
	dir := tb.TempDir()
	r, err := git.PlainInit(dir, true)
	if err != nil {
		tb.Fatal(err)
	}
	return &testRepo{tb: tb, dir: dir, repo: r, blobs: map[string]plumbing.Hash{}}
}

func (r *testRepo) blob(data string) plumbing.Hash {
	if h, ok := r.blobs[data]; ok {
		return h
	}
	o := r.repo.Storer.NewEncodedObject()
	o.SetType(plumbing.BlobObject)
	w, _ := o.Writer()
	_, _ = w.Write([]byte(data))
	_ = w.Close()
	h, err := r.repo.Storer.SetEncodedObject(o)
	if err != nil {
		r.tb.Fatal(err)
	}
	r.blobs[data] = h
	return h
}

// tree stores the tree of files (paths relative to prefix) and returns it.
func (r *testRepo) tree(files map[string]tfile) plumbing.Hash {
	dirs := map[string]map[string]tfile{}
	var entries []object.TreeEntry
	for p, f := range files {
		if dir, rest, ok := strings.Cut(p, "/"); ok {
			if dirs[dir] == nil {
				dirs[dir] = map[string]tfile{}
			}
			dirs[dir][rest] = f
			continue
		}
		mode := f.mode
		if mode == 0 {
			mode = filemode.Regular
		}
		entries = append(entries, object.TreeEntry{Name: p, Mode: mode, Hash: r.blob(f.data)})
	}
	for d, fs := range dirs {
		entries = append(entries, object.TreeEntry{Name: d, Mode: filemode.Dir, Hash: r.tree(fs)})
	}
	// Git orders a tree's entries by name, a directory as if it ended in "/".
	key := func(e object.TreeEntry) string {
		if e.Mode == filemode.Dir {
			return e.Name + "/"
		}
		return e.Name
	}
	slices.SortFunc(entries, func(a, b object.TreeEntry) int { return strings.Compare(key(a), key(b)) })
	t := &object.Tree{Entries: entries}
	o := r.repo.Storer.NewEncodedObject()
	if err := t.Encode(o); err != nil {
		r.tb.Fatal(err)
	}
	h, err := r.repo.Storer.SetEncodedObject(o)
	if err != nil {
		r.tb.Fatal(err)
	}
	return h
}

// commit stores a commit of files on top of the current head and moves
// refs/heads/main to it.
func (r *testRepo) commit(files map[string]tfile) string {
	r.tb.Helper()
	r.n++
	sig := object.Signature{Name: "t", Email: "t@invalid", When: time.Date(2026, 1, 1, 0, r.n, 0, 0, time.UTC)}
	c := &object.Commit{Author: sig, Committer: sig, Message: fmt.Sprintf("commit %d\n", r.n), TreeHash: r.tree(files)}
	if !r.head.IsZero() {
		c.ParentHashes = []plumbing.Hash{r.head}
	}
	o := r.repo.Storer.NewEncodedObject()
	if err := c.Encode(o); err != nil {
		r.tb.Fatal(err)
	}
	h, err := r.repo.Storer.SetEncodedObject(o)
	if err != nil {
		r.tb.Fatal(err)
	}
	r.head = h
	if err := r.repo.Storer.SetReference(plumbing.NewHashReference("refs/heads/main", h)); err != nil {
		r.tb.Fatal(err)
	}
	return h.String()
}

func (r *testRepo) store(opts Options) *Store {
	r.tb.Helper()
	if opts.GraphPaths == nil {
		opts.GraphPaths = []string{"records/"}
	}
	if opts.DocsPaths == nil {
		opts.DocsPaths = []string{"handbook/"}
	}
	s, err := Open(r.dir, opts)
	if err != nil {
		r.tb.Fatal(err)
	}
	return s
}

func text(s string) tfile { return tfile{data: s} }

// record writes a record file.
func record(id, kind string, lines ...string) tfile {
	var b strings.Builder
	fmt.Fprintf(&b, "---\nid: %s\nkind: %s\n", id, kind)
	for _, l := range lines {
		if strings.HasPrefix(l, "body:") {
			continue
		}
		b.WriteString(l + "\n")
	}
	b.WriteString("---\n")
	for _, l := range lines {
		if body, ok := strings.CutPrefix(l, "body:"); ok {
			b.WriteString(body + "\n")
		}
	}
	return text(b.String())
}

func recPath(kind, id string) string { return path.Join("records", kind, id+".md") }
