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
// outside scope on either side is neither listed nor counted. Unchanged
// subtrees are skipped by their hash, so the cost follows the changes, not
// the repository.
func (s *Store) Diff(ctx context.Context, from, to Pin, scope Scope, cursor, limit int) (DiffPage, error) {
	cursor, limit, err := pageBounds(cursor, limit)
	if err != nil {
		return DiffPage{}, err
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
				ch, prob, ok := s.change(ar.area, pre, c, scope)
				if prob != nil {
					page.Skipped = append(page.Skipped, *prob)
				}
				if !ok || done[ch.Path] {
					continue
				}
				done[ch.Path] = true
				all = append(all, ch)
			}
		}
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

// change summarises one tree change; ok is false for what scope hides or
// what is not Markdown. The caller holds s.mu.
func (s *Store) change(area, pre string, c *object.Change, scope Scope) (Change, *Problem, bool) {
	action, err := c.Action()
	if err != nil {
		return Change{}, nil, false
	}
	name := c.To.Name
	if action == merkletrie.Delete {
		name = c.From.Name
	}
	p := pre + name
	if !isMarkdown(p) || !scope.AllowsPath(p) {
		return Change{}, nil, false
	}
	ch := Change{Path: p, Area: area, Action: map[merkletrie.Action]string{merkletrie.Insert: "added", merkletrie.Modify: "modified", merkletrie.Delete: "deleted"}[action]}
	if area == "doc" {
		return ch, nil, true
	}
	var old, cur *Record
	for _, side := range []struct {
		e   object.ChangeEntry
		dst **Record
	}{{c.From, &old}, {c.To, &cur}} {
		if side.e.Name == "" || side.e.TreeEntry.Hash == plumbing.ZeroHash {
			continue
		}
		if side.e.TreeEntry.Mode != filemode.Regular && side.e.TreeEntry.Mode != filemode.Executable {
			return Change{}, &Problem{p, CodeSymlink, "not a regular file; not read"}, false
		}
		b, err := s.blob(p, side.e.TreeEntry.Hash)
		if err == nil {
			*side.dst, err = ParseRecord(p, b, s.limits)
		}
		if err != nil {
			var e *Error
			if errors.As(err, &e) {
				return Change{}, &Problem{p, e.Code, e.Reason}, false
			}
			return Change{}, nil, false
		}
		if !scope.AllowsKind((*side.dst).Kind) {
			return Change{}, nil, false
		}
	}
	r := cur
	if r == nil {
		r = old
	}
	if r == nil {
		return Change{}, nil, false
	}
	ch.ID, ch.Kind = r.ID, r.Kind
	if old != nil && cur != nil {
		ch.Fields = changedFields(old, cur)
		ch.Body = old.Body != cur.Body
	}
	return ch, nil, true
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
