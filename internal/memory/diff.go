package memory

import (
	"context"
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/utils/merkletrie"
)

// Change is one record or document that differs between two commits.
type Change struct {
	Path   string `json:"path"`
	Action string `json:"action"` // added, modified, deleted
	Area   string `json:"area"`   // record or doc
	// ID and Kind name a record (its newer side when both exist).
	ID   string `json:"id,omitempty"`
	Kind string `json:"kind,omitempty"`
	// Fields lists the frontmatter keys a modified record changed; Body
	// says whether its Markdown body changed.
	Fields []string `json:"fields,omitempty"`
	Body   bool     `json:"body,omitempty"`
}

// DiffPage is one page of the changes from one commit to another.
type DiffPage struct {
	From       string    `json:"from"`
	To         string    `json:"to"`
	Changes    []Change  `json:"changes"`
	Total      int       `json:"total"`
	NextCursor int       `json:"next_cursor,omitempty"`
	Skipped    []Problem `json:"skipped,omitempty"`
}

// Diff lists what changed under the graph and docs paths from one commit
// to another, in path order, as scope sees it: a record whose kind is
// outside scope on either side is neither listed nor counted, and a record
// is compared as scope sees it on each side (edges and associations to
// hidden records removed, see Index.view), so a change only to what names a
// hidden record is no change at all. Unchanged subtrees are skipped by
// their hash, so the cost follows the changes, not the repository (the
// index of from, which a bounded scope needs, is the pin's, built once).
func (s *Store) Diff(ctx context.Context, from, to Pin, scope Scope, cursor, limit int) (DiffPage, error) {
	cursor, limit, err := pageBounds(cursor, limit)
	if err != nil {
		return DiffPage{}, err
	}
	var ix *Index
	if bounded(s.graph, scope) {
		if ix, err = s.Index(ctx, from); err != nil {
			return DiffPage{}, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a, err := s.tree(from.Commit)
	if err != nil {
		return DiffPage{}, err
	}
	b, err := s.tree(to.Commit)
	if err != nil {
		return DiffPage{}, err
	}
	page := DiffPage{From: from.Commit, To: to.Commit, Changes: []Change{}}
	var all []Change
	areas := []struct {
		area     string
		prefixes []string
	}{{"record", s.graph}, {"doc", s.docs}}
	done := map[string]bool{}
	var pending []pendingChange
	for _, ar := range areas {
		for _, pre := range ar.prefixes {
			dir := strings.TrimSuffix(pre, "/")
			sa, sb := subtree(a, dir), subtree(b, dir)
			if sa == nil && sb == nil {
				continue
			}
			changes, err := object.DiffTreeWithOptions(ctx, sa, sb, nil)
			if err != nil {
				if ctx.Err() != nil {
					return DiffPage{}, ctx.Err()
				}
				return DiffPage{}, unreadable(dir, err)
			}
			if len(changes) > s.limits.MaxEntries {
				return DiffPage{}, errorf(ErrLimitExceeded, CodeTooManyEntries, dir, 0, "more than %d changed entries between %s and %s; diff nearer commits", s.limits.MaxEntries, short(from.Commit), short(to.Commit))
			}
			for _, c := range changes {
				if err := ctx.Err(); err != nil {
					return DiffPage{}, err
				}
				pc, prob, ok := s.change(ar.area, pre, c, scope)
				if prob != nil {
					page.Skipped = append(page.Skipped, *prob)
				}
				if !ok || done[pc.ch.Path] {
					continue
				}
				done[pc.ch.Path] = true
				pending = append(pending, pc)
			}
		}
	}
	after := afterIDs(ix, pending)
	for _, pc := range pending {
		if pc.hidden {
			continue
		}
		ch, old, cur := pc.ch, pc.old, pc.cur
		if ix != nil && old != nil && cur != nil {
			// Each side as scope sees it at its own commit.
			old = ix.view(old, scope)
			cur = viewWith(cur, func(id string) bool { return after.visible(ix, id, scope) })
		}
		if old != nil && cur != nil {
			ch.Fields = changedFields(old, cur)
			ch.Body = old.Body != cur.Body
			if ix != nil && len(ch.Fields) == 0 && !ch.Body {
				// Nothing scope sees changed: the blob's text, or an edge
				// to a hidden record, is not scope's to see.
				continue
			}
		}
		all = append(all, ch)
	}
	slices.SortFunc(all, func(x, y Change) int { return strings.Compare(x.Path, y.Path) })
	page.Total = len(all)
	if cursor < len(all) {
		page.Changes = all[cursor:min(len(all), cursor+limit)]
	}
	if cursor+len(page.Changes) < page.Total {
		page.NextCursor = cursor + len(page.Changes)
	}
	return page, nil
}

func subtree(t *object.Tree, dir string) *object.Tree {
	if dir == "" {
		return t
	}
	sub, err := t.Tree(dir)
	if err != nil {
		return nil
	}
	return sub
}

// pendingChange is one tree change, read: its summary and, for a record,
// both sides parsed. hidden marks a record outside scope on either side,
// kept so the records of the newer commit are known whole.
type pendingChange struct {
	ch       Change
	old, cur *Record
	hidden   bool
}

// change reads one tree change; ok is false for what scope's paths hide or
// what is not Markdown. The caller holds s.mu.
func (s *Store) change(area, pre string, c *object.Change, scope Scope) (pendingChange, *Problem, bool) {
	action, err := c.Action()
	if err != nil {
		return pendingChange{}, nil, false
	}
	name := c.To.Name
	if action == merkletrie.Delete {
		name = c.From.Name
	}
	p := pre + name
	if !isMarkdown(p) || !scope.AllowsPath(p) {
		return pendingChange{}, nil, false
	}
	pc := pendingChange{ch: Change{Path: p, Area: area, Action: map[merkletrie.Action]string{merkletrie.Insert: "added", merkletrie.Modify: "modified", merkletrie.Delete: "deleted"}[action]}}
	if area == "doc" {
		return pc, nil, true
	}
	for _, side := range []struct {
		e   object.ChangeEntry
		dst **Record
	}{{c.From, &pc.old}, {c.To, &pc.cur}} {
		if side.e.Name == "" || side.e.TreeEntry.Hash == plumbing.ZeroHash {
			continue
		}
		if side.e.TreeEntry.Mode != filemode.Regular && side.e.TreeEntry.Mode != filemode.Executable {
			return pendingChange{}, &Problem{p, CodeSymlink, "not a regular file; not read"}, false
		}
		b, err := s.blob(p, side.e.TreeEntry.Hash)
		if err == nil {
			*side.dst, err = ParseRecord(p, b, s.limits)
		}
		if err != nil {
			var e *Error
			if errors.As(err, &e) {
				return pendingChange{}, &Problem{p, e.Code, e.Reason}, false
			}
			return pendingChange{}, nil, false
		}
		pc.hidden = pc.hidden || !scope.AllowsKind((*side.dst).Kind)
	}
	r := pc.cur
	if r == nil {
		r = pc.old
	}
	if r == nil {
		return pendingChange{}, nil, false
	}
	pc.ch.ID, pc.ch.Kind = r.ID, r.Kind
	return pc, nil, true
}

// after is what the newer commit of a diff holds that the pinned index
// does not: the records the changes add or rewrite, by ID, and the IDs
// they remove. With the pin's index it tells, for the cost of the changes,
// which record an ID names at the newer commit.
type after struct {
	added   map[string]*Record
	removed map[string]bool
}

func afterIDs(ix *Index, pending []pendingChange) after {
	a := after{added: map[string]*Record{}, removed: map[string]bool{}}
	if ix == nil {
		return a
	}
	for _, pc := range pending {
		if pc.old != nil {
			if r, ok := ix.byID[pc.old.ID]; ok && r.Path == pc.ch.Path {
				a.removed[pc.old.ID] = true
			}
		}
	}
	for _, pc := range pending {
		if pc.cur != nil {
			a.added[pc.cur.ID] = pc.cur
		}
	}
	return a
}

// visible reports whether id may be named to scope at the newer commit:
// no record there, or one scope allows.
func (a after) visible(ix *Index, id string, scope Scope) bool {
	if r, ok := a.added[id]; ok {
		return scope.allows(r)
	}
	if a.removed[id] {
		return true
	}
	return ix.visibleID(id, scope)
}

func changedFields(a, b *Record) []string {
	var out []string
	cmp := func(k string, x, y any) {
		if !reflect.DeepEqual(x, y) {
			out = append(out, k)
		}
	}
	cmp("id", a.ID, b.ID)
	cmp("kind", a.Kind, b.Kind)
	cmp("owner", a.Owner, b.Owner)
	cmp("repo", a.Repo, b.Repo)
	cmp("stack", a.Stack, b.Stack)
	cmp("associations", a.Associations, b.Associations)
	cmp("edges", a.Edges, b.Edges)
	keys := slices.Sorted(maps.Keys(a.Fields))
	for k := range b.Fields {
		if _, ok := a.Fields[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		cmp(k, a.Fields[k], b.Fields[k])
	}
	return out
}
