package memory

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
)

// Index is the graph of one pinned commit: its records by ID and path, the
// docs files, and the entries that were skipped and why. An Index is
// immutable once built and shared by every task on its commit.
type Index struct {
	pin      Pin
	records  []*Record // by ID
	byID     map[string]*Record
	byPath   map[string]*Record
	text     map[*Record]string // lower-cased search text
	docs     []file
	problems []Problem
	graph    []string
}

// Pin is the commit the index was built at.
func (ix *Index) Pin() Pin { return ix.pin }

// Len is the number of records, over every kind.
func (ix *Index) Len() int { return len(ix.records) }

// Problems are the entries the index skipped, under scope's paths.
func (ix *Index) Problems(scope Scope) []Problem {
	var out []Problem
	for _, p := range ix.problems {
		if scope.AllowsPath(p.Path) {
			out = append(out, p)
		}
	}
	return out
}

// Cache holds built indexes by commit and configuration, so that every
// task pinned to one commit shares one index and a commit is indexed once
// however many tasks start on it together. It keeps the most recently
// used entries up to its capacity.
type Cache struct {
	mu      sync.Mutex
	cap     int
	entries map[string]*cacheEntry
	order   []string // least recently used first
	builds  int
}

type cacheEntry struct {
	done chan struct{}
	ix   *Index
	err  error
}

// NewCache returns a cache keeping at most capacity indexes (at least 1).
func NewCache(capacity int) *Cache {
	return &Cache{cap: max(capacity, 1), entries: map[string]*cacheEntry{}}
}

// Builds is how many indexes the cache has built: a test's view of sharing.
func (c *Cache) Builds() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.builds
}

func (c *Cache) get(ctx context.Context, key string, build func() (*Index, error)) (*Index, error) {
	c.mu.Lock()
	e, ok := c.entries[key]
	if ok {
		c.touch(key)
		c.mu.Unlock()
		select {
		case <-e.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if e.err == nil {
			return e.ix, nil
		}
		// A failed build is not kept: the next caller builds again.
		return c.get(ctx, key, build)
	}
	e = &cacheEntry{done: make(chan struct{})}
	c.entries[key] = e
	c.order = append(c.order, key)
	c.builds++
	c.mu.Unlock()

	e.ix, e.err = build()
	close(e.done)

	c.mu.Lock()
	defer c.mu.Unlock()
	if e.err != nil {
		if c.entries[key] == e {
			delete(c.entries, key)
			c.order = slices.DeleteFunc(c.order, func(k string) bool { return k == key })
		}
		return nil, e.err
	}
	for len(c.order) > c.cap {
		old := c.order[0]
		c.order = c.order[1:]
		delete(c.entries, old)
	}
	return e.ix, nil
}

func (c *Cache) touch(key string) {
	i := slices.Index(c.order, key)
	if i >= 0 {
		c.order = append(slices.Delete(c.order, i, i+1), key)
	}
}

// Index returns the index of pin's commit, building it once.
func (s *Store) Index(ctx context.Context, pin Pin) (*Index, error) {
	key := fmt.Sprintf("%s\x00%s\x00%v\x00%v\x00%+v", s.dir, pin.Commit, s.graph, s.docs, s.limits)
	ix, err := s.cache.get(ctx, key, func() (*Index, error) { return s.build(ctx, pin) })
	if err != nil {
		return nil, err
	}
	if ix.pin.Ref != pin.Ref {
		// Same commit reached by another ref: share the records, name the
		// caller's ref.
		cp := *ix
		cp.pin = pin
		return &cp, nil
	}
	return ix, nil
}

func (s *Store) build(ctx context.Context, pin Pin) (*Index, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	root, err := s.tree(pin.Commit)
	if err != nil {
		return nil, err
	}
	files, problems, err := s.walk(ctx, root, s.graph)
	if err != nil {
		return nil, err
	}
	ix := &Index{pin: pin, byID: map[string]*Record{}, byPath: map[string]*Record{}, text: map[*Record]string{}, graph: s.graph, problems: problems}
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if !isMarkdown(f.Path) {
			continue
		}
		b, err := s.blob(f.Path, f.Hash)
		if err == nil {
			var r *Record
			r, err = ParseRecord(f.Path, b, s.limits)
			if err == nil {
				r.Blob = f.Hash.String()
				if prev, dup := ix.byID[r.ID]; dup {
					ix.problems = append(ix.problems, Problem{f.Path, CodeIDCollision, fmt.Sprintf("record id %q is also used by %s; the first path in order is kept", r.ID, prev.Path)})
					continue
				}
				ix.byID[r.ID] = r
				ix.byPath[r.Path] = r
				ix.records = append(ix.records, r)
				ix.text[r] = searchText(r)
				continue
			}
		}
		var e *Error
		if !errors.As(err, &e) || e.Kind == ErrRepository {
			return nil, err
		}
		ix.problems = append(ix.problems, Problem{f.Path, e.Code, e.Reason})
	}
	slices.SortFunc(ix.records, func(a, b *Record) int { return strings.Compare(a.ID, b.ID) })
	docs, dprob, err := s.walk(ctx, root, s.docs)
	if err != nil {
		return nil, err
	}
	for _, d := range docs {
		if isMarkdown(d.Path) {
			ix.docs = append(ix.docs, d)
		}
	}
	ix.problems = append(ix.problems, dprob...)
	return ix, nil
}

func isMarkdown(p string) bool {
	return strings.HasSuffix(p, ".md") || strings.HasSuffix(p, ".markdown")
}

func searchText(r *Record) string {
	var b strings.Builder
	for _, s := range []string{r.ID, r.Kind, r.Owner, r.Repo, r.Stack, r.Path} {
		b.WriteString(s)
		b.WriteByte('\n')
	}
	var flat func(v any)
	flat = func(v any) {
		switch x := v.(type) {
		case string:
			b.WriteString(x)
			b.WriteByte('\n')
		case []any:
			for _, c := range x {
				flat(c)
			}
		case map[string]any:
			for k, c := range x {
				b.WriteString(k)
				b.WriteByte('\n')
				flat(c)
			}
		}
	}
	for k, v := range r.Fields {
		b.WriteString(k)
		b.WriteByte('\n')
		flat(v)
	}
	b.WriteString(r.Body)
	return strings.ToLower(b.String())
}

// view is r as scope sees it: associations and edges to records outside
// the scope are removed, so that a hidden record is never named. Its Blob
// is still r's; Read gives the caller the blob ID scope may see.
func (ix *Index) view(r *Record, scope Scope) *Record {
	return viewWith(r, func(id string) bool { return ix.visibleID(id, scope) })
}

// viewWith is r with the associations and edges visible rejects removed.
func viewWith(r *Record, visible func(id string) bool) *Record {
	cp := *r
	cp.Associations = nil
	cp.Edges = nil
	for _, a := range r.Associations {
		if visible(a) {
			cp.Associations = append(cp.Associations, a)
		}
	}
	for _, e := range r.Edges {
		if visible(e.To) {
			cp.Edges = append(cp.Edges, e)
		}
	}
	return &cp
}

// bounded reports whether scope leaves some of the graph out: a kind or a
// part of a graph path it does not allow. It depends on the scope and the
// configured graph paths alone, never on which records exist, so that
// what it decides (a record's text is its blob, or the record rendered as
// the scope sees it) tells the caller nothing about hidden records: a
// record's blob is its own to show only to a scope that could hide
// nothing from it.
func (ix *Index) bounded(scope Scope) bool { return bounded(ix.graph, scope) }

func bounded(graph []string, scope Scope) bool {
	if !slices.Contains(scope.Kinds, "*") {
		return true
	}
	for _, g := range graph {
		covered := false
		for _, p := range scope.Paths {
			covered = covered || pathCovers(p, g)
		}
		if !covered {
			return true
		}
	}
	return false
}

// visibleID reports whether id may be named to scope: a record in scope,
// or no record at all (a dangling reference names nothing hidden).
func (ix *Index) visibleID(id string, scope Scope) bool {
	t, ok := ix.byID[id]
	return !ok || scope.allows(t)
}

// byIDIn returns the record with ID id as scope knows it: one outside
// scope is absent, exactly like one that does not exist.
func (ix *Index) byIDIn(id string, scope Scope) (*Record, bool) {
	r, ok := ix.byID[id]
	if !ok || !scope.allows(r) {
		return nil, false
	}
	return r, true
}

// byPathIn returns the record at path p as scope knows it.
func (ix *Index) byPathIn(p string, scope Scope) (*Record, bool) {
	r, ok := ix.byPath[p]
	if !ok || !scope.allows(r) {
		return nil, false
	}
	return r, true
}

// Read returns the record with ID or path key, as scope sees it. A record
// outside scope is reported exactly like one that does not exist.
func (ix *Index) Read(key string, scope Scope) (*Record, error) {
	r, ok := ix.byID[key]
	if !ok {
		r, ok = ix.byPath[key]
	}
	if !ok || !scope.allows(r) {
		return nil, errorf(ErrNotFound, CodeNotFound, "", 0, "no record %q at commit %s", key, short(ix.pin.Commit))
	}
	v := ix.view(r, scope)
	if ix.bounded(scope) {
		// The ID of the record as rendered (see Store.baseText): the
		// blob's own ID would tell a record with a hidden edge from one
		// without.
		v.Blob = ""
		if b, err := Render(v); err == nil {
			v.Blob = plumbing.ComputeHash(plumbing.BlobObject, b).String()
		}
	}
	return v, nil
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
