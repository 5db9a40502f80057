package memory

import (
	"fmt"
	"net/mail"
	"slices"
	"strings"
	"time"
)

// A proposal is a change request, not a write: memory.update.propose
// answers from what the proposer's scope sees, and nothing outside that
// scope changes the answer. A record the proposer cannot see that holds
// the path or the ID of a proposed record, or that refers to a record the
// proposal deletes, is a conflict only a reviewer with full scope learns
// of, through Review, before anything reaches the memory repository.
// Answering the proposer otherwise would make propose an oracle for
// records its grant hides.

// ViolationPathTaken reports a proposed record added at a path that is
// already a file at the pinned commit.
const ViolationPathTaken = "path_taken"

// Review is a proposal as a reviewer with full scope sees it.
type Review struct {
	// Changes are the proposal's changes, an edit keeping the references
	// to records the proposer could not see.
	Changes []ProposedChange `json:"changes"`
	// Conflicts are every violation at full scope: the ontology's (when
	// one is given), ID collisions and paths taken by any record, and
	// edges any record would be left with dangling.
	Conflicts []Violation `json:"conflicts"`
	// Patch is the proposal against the pinned blobs, for `git am`; nil
	// when a conflict at a path leaves no patch to write.
	Patch *Patch `json:"patch,omitempty"`
}

// Review reads a patch proposed under scope proposer (by
// memory.update.propose) for a reviewer with full scope: it reports every
// conflict with the pinned commit, hidden records included, and carries
// the patch from the proposer's view of each record onto its blob, keeping
// the edges and associations the proposer could not see. o, when not nil,
// validates the result.
func (s *Store) Review(ix *Index, o *Ontology, text []byte, proposer Scope) (Review, error) {
	changes, err := s.ChangesFromPatch(ix, text, proposer)
	if err != nil {
		return Review{}, err
	}
	out := Review{Changes: changes, Conflicts: []Violation{}}
	taken := map[string]bool{}
	for _, p := range ix.problems {
		taken[p.Path] = true // a file there, even if it is not a record
	}
	var files []fileChange
	blocked := false
	for i := range out.Changes {
		c := &out.Changes[i]
		r := &c.Record
		switch c.Op {
		case "add":
			if _, ok := ix.byPath[r.Path]; ok || taken[r.Path] {
				out.Conflicts = append(out.Conflicts, Violation{Code: ViolationPathTaken, ID: r.ID, Path: r.Path,
					Reason: fmt.Sprintf("%s is already a file at the pinned commit; choose another path or edit that record", r.Path)})
				blocked = true
				continue
			}
			body, err := Render(r)
			if err != nil {
				return Review{}, err
			}
			files = append(files, fileChange{path: r.Path, add: true, new: string(body)})
			continue
		}
		// ChangesFromPatch found the edited or deleted record by path, in
		// the proposer's scope: an edit keeps the path, a deletion the ID.
		orig := ix.byPath[r.Path]
		if c.Op == "delete" {
			orig = ix.byID[r.ID]
			r.Path = orig.Path
		}
		old, hash, err := s.baseText(ix, orig, All())
		if err != nil {
			return Review{}, err
		}
		fc := fileChange{path: orig.Path, old: old, oldHash: hash, del: c.Op == "delete"}
		if c.Op == "edit" {
			keepHidden(ix, orig, r, proposer)
			body, err := Render(r)
			if err != nil {
				return Review{}, err
			}
			fc.new = string(body)
		}
		files = append(files, fc)
	}
	if o != nil {
		out.Conflicts = append(out.Conflicts, o.Validate(ix, Proposal{Changes: out.Changes}, All())...)
	} else {
		for _, c := range out.Changes {
			if _, ok := ix.byID[c.Record.ID]; ok && c.Op == "add" {
				out.Conflicts = append(out.Conflicts, Violation{Code: ViolationIDCollision, ID: c.Record.ID,
					Reason: fmt.Sprintf("id %q is already used at the pinned commit", c.Record.ID)})
			}
		}
	}
	if blocked || len(files) == 0 {
		return out, nil
	}
	p := proposalHeader(text)
	patch, err := formatPatch(ix.pin.Commit, p, files)
	if err != nil {
		return Review{}, err
	}
	out.Patch = &patch
	return out, nil
}

// keepHidden puts back into the edited record r the edges and
// associations of orig that scope could not see (and so could not have
// meant to remove).
func keepHidden(ix *Index, orig, r *Record, scope Scope) {
	for _, a := range orig.Associations {
		if !ix.visibleID(a, scope) && !slices.Contains(r.Associations, a) {
			r.Associations = append(r.Associations, a)
		}
	}
	for _, e := range orig.Edges {
		if !ix.visibleID(e.To, scope) && !slices.Contains(r.Edges, e) {
			r.Edges = append(r.Edges, e)
		}
	}
}

// proposalHeader reads the author, date and subject of a format-patch
// mail, so the reviewed patch keeps them.
func proposalHeader(text []byte) Proposal {
	var p Proposal
	head, _, _ := strings.Cut(string(text), "\n\n")
	for _, l := range strings.Split(head, "\n") {
		switch {
		case strings.HasPrefix(l, "From: "):
			p.Author = strings.TrimPrefix(l, "From: ")
		case strings.HasPrefix(l, "Date: "):
			if d, err := mail.ParseDate(strings.TrimPrefix(l, "Date: ")); err == nil {
				p.Date = d
			}
		case strings.HasPrefix(l, "Subject: "):
			p.Subject = strings.TrimPrefix(strings.TrimPrefix(l, "Subject: "), "[PATCH] ")
		}
	}
	if p.Date.IsZero() {
		p.Date = time.Unix(0, 0)
	}
	return p
}
