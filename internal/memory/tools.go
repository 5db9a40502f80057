package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	"github.com/pabloagent/pablo/internal/clock"
)

// The six memory tools of seed 002, by capability ID.
const (
	ToolSearch   = "memory.graph.search"
	ToolRead     = "memory.record.read"
	ToolGrep     = "memory.docs.grep"
	ToolDiff     = "memory.snapshot.diff"
	ToolPropose  = "memory.update.propose"
	ToolValidate = "memory.ontology.validate"
)

// Grant is what one tool's grant allows: a scope, and (diff only) whether
// another ref than the pin may be read without an approval.
type Grant struct {
	Scope   Scope
	Refresh bool
}

// ToolsOptions configure the tools of one task.
type ToolsOptions struct {
	Store *Store
	// Ref is the configured ref; Pin, when set, is the pin to use (a
	// child's, shared with its root), else Ref is resolved now.
	Ref string
	Pin *Pin
	// Ontology validates proposals; nil leaves memory.ontology.validate
	// unavailable.
	Ontology *Ontology
	// Grants maps a tool's capability ID to its grant; a tool without one
	// is not offered.
	Grants map[string]Grant
	// WritePatch stores a proposed patch in the workspace and returns its
	// workspace-relative path.
	WritePatch func(name string, data []byte) (string, error)
	// ReadPatch reads a workspace file (a proposed patch) for validation,
	// at most MaxPatchBytes.
	ReadPatch func(path string) ([]byte, error)
	// Clock is the clock a patch's Date is read from; nil means the
	// system clock.
	Clock clock.Clock
}

// Tools are the memory tools of one task, pinned to one commit.
type Tools struct {
	opts ToolsOptions
	pin  Pin
	ix   *Index
}

// OpenTools resolves the pin (or takes the given one) and builds or shares
// its index.
func OpenTools(ctx context.Context, opts ToolsOptions) (*Tools, error) {
	var pin Pin
	if opts.Pin != nil {
		pin = *opts.Pin
	} else {
		p, err := opts.Store.Resolve(opts.Ref)
		if err != nil {
			return nil, err
		}
		pin = p
	}
	ix, err := opts.Store.Index(ctx, pin)
	if err != nil {
		return nil, err
	}
	if opts.Clock == nil {
		opts.Clock = clock.System{}
	}
	return &Tools{opts: opts, pin: pin, ix: ix}, nil
}

// Pin is the commit every call reads at.
func (t *Tools) Pin() Pin { return t.pin }

// Index is the pinned commit's index.
func (t *Tools) Index() *Index { return t.ix }

// Spec is one tool's declaration.
type Spec struct {
	ID          string
	Description string
	Schema      string
}

// Specs lists the granted tools in a fixed order.
func (t *Tools) Specs() []Spec {
	var out []Spec
	for _, s := range allSpecs() {
		if _, ok := t.opts.Grants[s.ID]; !ok {
			continue
		}
		if s.ID == ToolValidate && t.opts.Ontology == nil {
			continue
		}
		out = append(out, s)
	}
	return out
}

// ArgumentError is a call whose arguments the tool cannot use: a model
// misselection, not a memory failure.
type ArgumentError struct{ Reason string }

func (e *ArgumentError) Error() string { return "memory: invalid arguments: " + e.Reason }

func decode(args json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &ArgumentError{Reason: err.Error()}
	}
	return nil
}

type diffArgs struct {
	Against string `json:"against"`
	Cursor  int    `json:"cursor"`
	Limit   int    `json:"limit"`
}

// ReadsBeyondPin reports whether a call reads another commit than the pin
// (a diff against "current" or a named ref), which needs the diff grant's
// refresh or an approval, and the ref it names.
func (t *Tools) ReadsBeyondPin(id string, args json.RawMessage) (string, bool) {
	if id != ToolDiff {
		return "", false
	}
	var a diffArgs
	if decode(args, &a) != nil {
		return "", false
	}
	return a.Against, true
}

// Refresh reports whether the diff grant lets a call read beyond the pin
// without an approval.
func (t *Tools) Refresh() bool { return t.opts.Grants[ToolDiff].Refresh }

// Call runs one tool with validated arguments and returns its payload.
func (t *Tools) Call(ctx context.Context, id string, args json.RawMessage) (any, error) {
	g, ok := t.opts.Grants[id]
	if !ok {
		return nil, &ArgumentError{Reason: fmt.Sprintf("%s is not granted", id)}
	}
	switch id {
	case ToolSearch:
		var q Query
		if err := decode(args, &q); err != nil {
			return nil, err
		}
		return t.ix.Search(q, g.Scope)
	case ToolRead:
		var a struct {
			ID   string `json:"id"`
			Path string `json:"path"`
		}
		if err := decode(args, &a); err != nil {
			return nil, err
		}
		switch {
		case (a.ID == "") == (a.Path == ""):
			return nil, &ArgumentError{Reason: "give exactly one of id or path"}
		case a.ID != "":
			r, err := t.ix.Read(a.ID, g.Scope)
			return map[string]any{"commit": t.pin.Commit, "record": r}, err
		}
		if r, err := t.ix.Read(a.Path, g.Scope); err == nil {
			return map[string]any{"commit": t.pin.Commit, "record": r}, nil
		}
		d, err := t.opts.Store.ReadDoc(ctx, t.ix, a.Path, g.Scope)
		return map[string]any{"commit": t.pin.Commit, "doc": d}, err
	case ToolGrep:
		var q GrepQuery
		if err := decode(args, &q); err != nil {
			return nil, err
		}
		return t.opts.Store.Grep(ctx, t.ix, q, g.Scope)
	case ToolDiff:
		var a diffArgs
		if err := decode(args, &a); err != nil {
			return nil, err
		}
		ref := a.Against
		if ref == "" || ref == "current" {
			ref = t.opts.Ref
		}
		to, err := t.opts.Store.Resolve(ref)
		if err != nil {
			return nil, err
		}
		return t.opts.Store.Diff(ctx, t.pin, to, g.Scope, a.Cursor, a.Limit)
	case ToolPropose:
		var p Proposal
		if err := decode(args, &p); err != nil {
			return nil, err
		}
		p.Date = t.opts.Clock.Now()
		patch, err := t.opts.Store.Propose(t.ix, p, g.Scope)
		if err != nil {
			return nil, err
		}
		name := "memory-proposal-" + patch.SHA256[len("sha256:"):len("sha256:")+16] + ".patch"
		path, err := t.opts.WritePatch(name, patch.Text)
		if err != nil {
			return nil, err
		}
		var violations []Violation
		if t.opts.Ontology != nil {
			violations = t.opts.Ontology.Validate(t.ix, p, g.Scope)
		}
		// revision is the file's SHA-256 as the workspace tools name it
		// (lowercase hex), so the patch can be handed to a child as an
		// artifact {path, revision} like any workspace file.
		return map[string]any{"path": path, "sha256": patch.SHA256, "revision": strings.TrimPrefix(patch.SHA256, "sha256:"),
			"base": patch.Base, "files": patch.Files, "violations": violations}, nil
	case ToolValidate:
		var a struct {
			Changes []ProposedChange `json:"changes"`
			Patch   string           `json:"patch"`
		}
		if err := decode(args, &a); err != nil {
			return nil, err
		}
		switch {
		case (len(a.Changes) == 0) == (a.Patch == ""):
			return nil, &ArgumentError{Reason: "give exactly one of changes or patch"}
		case len(a.Changes) > MaxProposedChanges:
			return nil, &ArgumentError{Reason: fmt.Sprintf("at most %d changes", MaxProposedChanges)}
		case a.Patch != "":
			if t.opts.ReadPatch == nil {
				return nil, &ArgumentError{Reason: "no workspace to read a patch from"}
			}
			text, err := t.opts.ReadPatch(a.Patch)
			if err != nil {
				return nil, errorf(ErrNotFound, CodeNotFound, a.Patch, 0, "the patch cannot be read from the workspace")
			}
			if a.Changes, err = t.opts.Store.ChangesFromPatch(t.ix, text, g.Scope); err != nil {
				return nil, err
			}
		}
		vs := t.opts.Ontology.Validate(t.ix, Proposal{Changes: a.Changes}, g.Scope)
		return map[string]any{"commit": t.pin.Commit, "valid": len(vs) == 0, "violations": vs}, nil
	}
	return nil, &ArgumentError{Reason: fmt.Sprintf("unknown memory tool %s", id)}
}

// Within returns the tools with every grant cut down to bound (a child's
// memory scope): the same pin, index and ontology, never a wider grant.
func (t *Tools) Within(bound Scope) *Tools {
	cp := *t
	cp.opts.Grants = make(map[string]Grant, len(t.opts.Grants))
	for id, g := range t.opts.Grants {
		g.Scope = g.Scope.Within(bound)
		cp.opts.Grants[id] = g
	}
	return &cp
}

// Grants are the tools' grants by capability ID.
func (t *Tools) Grants() map[string]Grant { return maps.Clone(t.opts.Grants) }
