package memory

import "context"

// Doc is one free-form Markdown file at a revision.
type Doc struct {
	Path     string `json:"path"`
	Revision string `json:"revision"`
	Text     string `json:"text"`
}

// ReadDoc returns the docs file at path of ix's commit, if scope's paths
// allow it. A file outside scope is reported like one that does not exist.
func (s *Store) ReadDoc(ctx context.Context, ix *Index, path string, scope Scope) (Doc, error) {
	if err := ctx.Err(); err != nil {
		return Doc{}, err
	}
	notFound := errorf(ErrNotFound, CodeNotFound, "", 0, "no document %q at commit %s", path, short(ix.pin.Commit))
	if !scope.AllowsPath(path) {
		return Doc{}, notFound
	}
	if r, ok := ix.byPath[path]; ok && !scope.allows(r) {
		return Doc{}, notFound
	}
	for _, d := range ix.docs {
		if d.Path != path {
			continue
		}
		s.mu.Lock()
		b, err := s.textAs(ix, d, scope)
		s.mu.Unlock()
		if err != nil {
			return Doc{}, err
		}
		return Doc{Path: d.Path, Revision: ix.pin.Commit, Text: string(b)}, nil
	}
	// Not a listed doc: a symlink or other unsafe entry gets its own error.
	s.mu.Lock()
	defer s.mu.Unlock()
	root, err := s.tree(ix.pin.Commit)
	if err != nil {
		return Doc{}, err
	}
	if under(path, s.docs) {
		if _, err := s.entryAt(root, path); err != nil && CodeOf(err) != CodeNotFound {
			return Doc{}, err
		}
	}
	return Doc{}, notFound
}
