package memory

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// Ontology says which record kinds exist, which fields each requires, and
// which edge kinds may link which kinds. It is a TOML file:
//
//	[kinds.service]
//	required = ["owner", "repo"]
//
//	[edges.depends_on]
//	from = ["service"]
//	to = ["service", "library"]
//
// An edge kind with an empty from (or to) list allows every kind there.
// Associations link any two records.
type Ontology struct {
	Kinds map[string]KindRule `toml:"kinds" json:"kinds"`
	Edges map[string]EdgeRule `toml:"edges" json:"edges"`
}

// KindRule is one record kind.
type KindRule struct {
	Description string   `toml:"description" json:"description,omitempty"`
	Required    []string `toml:"required" json:"required,omitempty"`
}

// EdgeRule is one edge kind.
type EdgeRule struct {
	Description string   `toml:"description" json:"description,omitempty"`
	From        []string `toml:"from" json:"from,omitempty"`
	To          []string `toml:"to" json:"to,omitempty"`
}

// MaxOntologyBytes bounds an ontology file.
const MaxOntologyBytes = 256 << 10

// ParseOntology reads an ontology strictly: unknown keys, a kind without
// rules that make sense, or an edge naming an unknown kind are errors at
// name's line.
func ParseOntology(name string, b []byte) (*Ontology, error) {
	if len(b) > MaxOntologyBytes {
		return nil, errorf(ErrInvalidOntology, CodeOntology, name, 0, "%d bytes, over the %d-byte bound", len(b), MaxOntologyBytes)
	}
	var o Ontology
	dec := toml.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o); err != nil {
		line := 0
		var de *toml.DecodeError
		var sm *toml.StrictMissingError
		switch {
		case errors.As(err, &de):
			line, _ = de.Position()
		case errors.As(err, &sm) && len(sm.Errors) > 0:
			line, _ = sm.Errors[0].Position()
			e := errorf(ErrInvalidOntology, CodeOntology, name, line, "unknown key %q; an ontology has [kinds.NAME] (description, required) and [edges.NAME] (description, from, to)", strings.Join(sm.Errors[0].Key(), "."))
			e.Err = err
			return nil, e
		}
		e := errorf(ErrInvalidOntology, CodeOntology, name, line, "not a valid ontology: %v", err)
		e.Err = err
		return nil, e
	}
	if len(o.Kinds) == 0 {
		return nil, errorf(ErrInvalidOntology, CodeOntology, name, 0, "no kinds; declare at least one [kinds.NAME] table")
	}
	for _, en := range slices.Sorted(mapKeys(o.Edges)) {
		e := o.Edges[en]
		for _, k := range append(slices.Clone(e.From), e.To...) {
			if _, ok := o.Kinds[k]; !ok {
				return nil, errorf(ErrInvalidOntology, CodeOntology, name, 0, "edges.%s names kind %q, which is not declared; add [kinds.%s] or remove it", en, k, k)
			}
		}
	}
	return &o, nil
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// Violation is one way a proposal breaks the ontology.
type Violation struct {
	Code   string `json:"code"`
	ID     string `json:"id,omitempty"`
	Path   string `json:"path,omitempty"`
	Field  string `json:"field,omitempty"`
	Reason string `json:"reason"`
}

// Violation codes.
const (
	ViolationUnknownKind     = "unknown_kind"
	ViolationMissingField    = "missing_field"
	ViolationUnknownEdgeKind = "unknown_edge_kind"
	ViolationEdgeEndpoint    = "edge_endpoint"
	ViolationDanglingEdge    = "dangling_edge"
	ViolationIDCollision     = "id_collision"
)

// Validate checks the records p adds or edits, and what its deletions
// leave behind, against the ontology, over ix's commit. It reports every
// violation, in change order; it never names a record outside scope.
func (o *Ontology) Validate(ix *Index, p Proposal, scope Scope) []Violation {
	out := []Violation{}
	result := map[string]*Record{} // ID -> record after the proposal; nil = deleted
	proposedIDs := map[string]int{}
	for i := range p.Changes {
		c := &p.Changes[i]
		switch c.Op {
		case "add":
			if n, dup := proposedIDs[c.Record.ID]; dup {
				out = append(out, Violation{Code: ViolationIDCollision, ID: c.Record.ID, Reason: fmt.Sprintf("changes %d and %d both add id %q", n, i, c.Record.ID)})
			} else if _, exists := ix.byIDIn(c.Record.ID, scope); exists {
				// A record outside scope is no collision here: it is
				// the reviewer's conflict (Review), not the caller's.
				out = append(out, Violation{Code: ViolationIDCollision, ID: c.Record.ID, Reason: fmt.Sprintf("id %q is already used at the pinned commit; choose another id or edit that record", c.Record.ID)})
			}
			proposedIDs[c.Record.ID] = i
			r := c.Record
			result[r.ID] = &r
		case "edit":
			r := c.Record
			result[r.ID] = &r
		case "delete":
			result[c.Record.ID] = nil
		}
	}
	lookup := func(id string) (*Record, bool) {
		if r, ok := result[id]; ok {
			return r, r != nil
		}
		return ix.byIDIn(id, scope)
	}
	for _, c := range p.Changes {
		if c.Op == "delete" {
			continue
		}
		r := c.Record
		v := func(code, field, format string, args ...any) {
			out = append(out, Violation{Code: code, ID: r.ID, Path: r.Path, Field: field, Reason: fmt.Sprintf(format, args...)})
		}
		if strings.TrimSpace(r.ID) == "" {
			v(ViolationMissingField, "id", "a record has an id")
		}
		rule, ok := o.Kinds[r.Kind]
		if !ok {
			v(ViolationUnknownKind, "kind", "kind %q is not in the ontology (kinds: %s)", r.Kind, strings.Join(slices.Sorted(mapKeys(o.Kinds)), ", "))
		}
		for _, f := range rule.Required {
			if !hasField(&r, f) {
				v(ViolationMissingField, f, "kind %q requires field %q", r.Kind, f)
			}
		}
		for _, e := range r.Edges {
			er, ok := o.Edges[e.Kind]
			if !ok {
				v(ViolationUnknownEdgeKind, "edges."+e.Kind, "edge kind %q is not in the ontology", e.Kind)
				continue
			}
			if len(er.From) > 0 && !slices.Contains(er.From, r.Kind) {
				v(ViolationEdgeEndpoint, "edges."+e.Kind, "edge kind %q does not start at kind %q (from: %s)", e.Kind, r.Kind, strings.Join(er.From, ", "))
			}
			t, ok := lookup(e.To)
			switch {
			case !ok || !scope.allows(t):
				v(ViolationDanglingEdge, "edges."+e.Kind, "edge %s -> %q names no record", e.Kind, e.To)
			case len(er.To) > 0 && !slices.Contains(er.To, t.Kind):
				v(ViolationEdgeEndpoint, "edges."+e.Kind, "edge kind %q does not end at kind %q (to: %s)", e.Kind, t.Kind, strings.Join(er.To, ", "))
			}
		}
		for _, a := range r.Associations {
			if t, ok := lookup(a); !ok || !scope.allows(t) {
				v(ViolationDanglingEdge, "associations", "association %q names no record", a)
			}
		}
	}
	// A deletion must not leave another record's edge dangling. Only the
	// records in scope, as scope sees them, are asked: a referrer outside
	// it (or a visible record's edge to a hidden one) is the reviewer's
	// conflict, so that the caller's answer is the same whether or not
	// one exists.
	for _, c := range p.Changes {
		if c.Op != "delete" {
			continue
		}
		id := c.Record.ID
		var visible []string
		for _, r := range ix.records {
			if _, changed := result[r.ID]; changed || !scope.allows(r) {
				continue
			}
			if refers(ix.view(r, scope), id) {
				visible = append(visible, r.ID)
			}
		}
		if len(visible) > 0 {
			out = append(out, Violation{Code: ViolationDanglingEdge, ID: id, Reason: fmt.Sprintf("deleting %q leaves edges dangling from %s", id, strings.Join(visible, ", "))})
		}
	}
	return out
}

func refers(r *Record, id string) bool {
	if slices.Contains(r.Associations, id) {
		return true
	}
	for _, e := range r.Edges {
		if e.To == id {
			return true
		}
	}
	return false
}

func hasField(r *Record, f string) bool {
	switch f {
	case "id":
		return r.ID != ""
	case "kind":
		return r.Kind != ""
	case "owner":
		return r.Owner != ""
	case "repo":
		return r.Repo != ""
	case "stack":
		return r.Stack != ""
	case "associations":
		return len(r.Associations) > 0
	case "edges":
		return len(r.Edges) > 0
	}
	v, ok := r.Fields[f]
	return ok && v != ""
}
