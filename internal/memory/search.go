package memory

import (
	"strings"
)

// Query selects records. Every set field must match; Text matches when
// each of its whitespace-separated words occurs (case-insensitively) in
// the record's ID, kind, owner, repo, stack, path, free fields or body.
type Query struct {
	Text        string `json:"text,omitempty"`
	Kind        string `json:"kind,omitempty"`
	EdgeKind    string `json:"edge_kind,omitempty"`
	EdgeTo      string `json:"edge_to,omitempty"`
	Owner       string `json:"owner,omitempty"`
	Repo        string `json:"repo,omitempty"`
	Stack       string `json:"stack,omitempty"`
	Association string `json:"association,omitempty"`
	// Cursor is the offset of the first result (a previous page's
	// NextCursor); Limit the page size (default 20, at most MaxPage).
	Cursor int `json:"cursor,omitempty"`
	Limit  int `json:"limit,omitempty"`
}

// MaxPage bounds every page this package returns.
const MaxPage = 100

// Summary is a record in a result list: enough to choose what to read.
type Summary struct {
	ID    string `json:"id"`
	Kind  string `json:"kind"`
	Path  string `json:"path"`
	Owner string `json:"owner,omitempty"`
	Repo  string `json:"repo,omitempty"`
	Stack string `json:"stack,omitempty"`
}

// SearchPage is one page of a search.
type SearchPage struct {
	Commit  string    `json:"commit"`
	Records []Summary `json:"records"`
	// Total counts the matches in the caller's scope, over every page.
	Total      int `json:"total"`
	NextCursor int `json:"next_cursor,omitempty"`
}

func pageBounds(cursor, limit int) (int, int, error) {
	if cursor < 0 || limit < 0 {
		return 0, 0, errorf(ErrInvalidArguments, CodeBadQuery, "", 0, "cursor and limit must not be negative")
	}
	if limit == 0 {
		limit = 20
	}
	return cursor, min(limit, MaxPage), nil
}

// Search returns the records matching q that scope allows, in ID order.
// Records outside scope are neither returned nor counted, and a query that
// names one (an edge or association target) matches nothing through it.
func (ix *Index) Search(q Query, scope Scope) (SearchPage, error) {
	cursor, limit, err := pageBounds(q.Cursor, q.Limit)
	if err != nil {
		return SearchPage{}, err
	}
	words := strings.Fields(strings.ToLower(q.Text))
	page := SearchPage{Commit: ix.pin.Commit, Records: []Summary{}}
	for _, r := range ix.records {
		if !scope.allows(r) || !ix.matches(r, q, words, scope) {
			continue
		}
		if page.Total >= cursor && len(page.Records) < limit {
			page.Records = append(page.Records, Summary{ID: r.ID, Kind: r.Kind, Path: r.Path, Owner: r.Owner, Repo: r.Repo, Stack: r.Stack})
		}
		page.Total++
	}
	if cursor+len(page.Records) < page.Total {
		page.NextCursor = cursor + len(page.Records)
	}
	return page, nil
}

func (ix *Index) matches(r *Record, q Query, words []string, scope Scope) bool {
	switch {
	case q.Kind != "" && r.Kind != q.Kind,
		q.Owner != "" && r.Owner != q.Owner,
		q.Repo != "" && r.Repo != q.Repo,
		q.Stack != "" && r.Stack != q.Stack:
		return false
	}
	if q.Association != "" {
		found := false
		for _, a := range r.Associations {
			if a == q.Association && ix.visibleID(a, scope) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	if q.EdgeKind != "" || q.EdgeTo != "" {
		found := false
		for _, e := range r.Edges {
			if (q.EdgeKind == "" || e.Kind == q.EdgeKind) && (q.EdgeTo == "" || e.To == q.EdgeTo) && ix.visibleID(e.To, scope) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	if len(words) > 0 {
		t := ix.text[r]
		for _, w := range words {
			if !strings.Contains(t, w) {
				return false
			}
		}
	}
	return true
}
