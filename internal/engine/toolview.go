package engine

import (
	"maps"
	"slices"
	"sync"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/internal/redact"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/mcp"
	"github.com/pabloagent/pablo/model"
)

// toolView is what a task's loop needs of its catalogs: the tools shown to
// the model, the catalog that owns each, the ones a layer kept out, and
// their compiled contracts. A view is immutable once built: a runtime builds
// the view of its own catalogs once and every task shares it, so an idle
// task holds no compiled schema of its own.
type toolView struct {
	owner     map[authority.ID]Catalog
	byWire    map[string]authority.ID
	refused   map[string]authority.Decision
	defs      []model.ToolDef
	contracts *authority.Contracts
	err       error // a schema outside the supported subset
	// decided holds the decision that admitted each offered tool, for
	// the dispatch snapshot.
	decided map[authority.ID]authority.Decision

	snapOnce  sync.Once
	snapTools []ledger.SnapshotEntry // see snapshotTools
}

// buildToolView builds the view of catalogs, first ones first, on top of
// base (nil for none), which is left unchanged: its compiled contracts are
// shared, the new catalogs' compiled through compiled (the runtime's: a
// schema it compiled for an earlier task is not compiled again). The definitions shown to the model
// are masked with secrets (an MCP server writes its tools' descriptions
// and schemas, and may write a credential it was given into them); the
// contracts check the schemas as the catalog declared them.
func buildToolView(auth authority.Authority, secrets *redact.Set, compiled *authority.CompiledSchemas, base *toolView, catalogs []Catalog) *toolView {
	v := &toolView{owner: map[authority.ID]Catalog{}, byWire: map[string]authority.ID{}, refused: map[string]authority.Decision{}, decided: map[authority.ID]authority.Decision{}}
	if base != nil {
		v.owner, v.byWire, v.refused, v.decided = maps.Clone(base.owner), maps.Clone(base.byWire), maps.Clone(base.refused), maps.Clone(base.decided)
		v.defs = slices.Clip(base.defs)
	}
	var specs []authority.ToolSpec
	for _, c := range catalogs {
		v.noteUnavailable(c)
		for _, spec := range c.Tools() {
			if _, dup := v.owner[spec.ID]; dup {
				continue
			}
			// Only tools the authority admits are shown to the model.
			d := auth.Decide(authority.Request{Capability: spec.ID})
			if !d.Allowed {
				v.refused[wireName(spec.ID)], v.refused[string(spec.ID)] = d, d
				continue
			}
			v.owner[spec.ID], v.decided[spec.ID] = c, d
			specs = append(specs, spec)
			w := wireName(spec.ID)
			v.byWire[w] = spec.ID
			params, _ := secrets.MaskJSON(spec.InputSchema)
			v.defs = append(v.defs, model.ToolDef{Name: w, Description: secrets.String(spec.Description), Parameters: params})
		}
	}
	if base == nil {
		v.contracts, v.err = compiled.NewContracts(auth, specs)
	} else if v.err = base.err; v.err == nil {
		v.contracts, v.err = base.contracts.With(specs)
	}
	return v
}

// noteUnavailable remembers the tools an MCP catalog discovered and did
// not admit (a drifted pin, task-required execution, a bound, a policy
// denial), each with the decision the catalog recorded for it.
func (v *toolView) noteUnavailable(c Catalog) {
	h, ok := c.(HealthReporter)
	if !ok {
		return
	}
	for _, srv := range h.Health() {
		for _, ts := range srv.Tools {
			if ts.Admitted || ts.ID == "" {
				continue
			}
			d := authority.Decision{Layer: ts.Layer, RuleID: ts.RuleID, Reason: ts.Reason}
			if ts.Code != mcp.CodePolicyDenied || d.RuleID == "" {
				// The catalog's own refusal, as mcp records it.
				d.Layer, d.RuleID = "mcp/"+srv.Server, "builtin.mcp."+string(ts.Code)
			}
			v.refused[ts.Alias], v.refused[string(ts.ID)] = d, d
		}
	}
}

// sharedTools returns the view of the runtime's own catalogs, built at the
// first task and shared by every task after it. It is nil when the view
// could change from one task to the next: an authority that is not
// [authority.Static], or a catalog that is a [HealthReporter] (an MCP
// catalog, whose tools follow its servers).
func (r *Runtime) sharedTools() *toolView {
	r.toolsOnce.Do(func() {
		if st, ok := r.opts.Authority.(authority.Static); !ok || !st.Static() {
			return
		}
		for _, c := range r.opts.Catalogs {
			if _, ok := c.(HealthReporter); ok {
				return
			}
		}
		r.tools = buildToolView(r.opts.Authority, r.opts.Secrets, &r.compiled, nil, r.opts.Catalogs)
	})
	return r.tools
}

// SharedTool reports whether the runtime's shared view (built at its
// first task) admits tool id; false when it shares none.
func (r *Runtime) SharedTool(id authority.ID) bool {
	v := r.sharedTools()
	if v == nil {
		return false
	}
	_, ok := v.owner[id]
	return ok
}

// narrow is the view of a child of the agent whose view v is: the tools of
// v that auth (the child's narrowed authority) admits, the subagent tool
// never (depth one), in v's order, with v's compiled contracts shared and
// deciding under auth. A child never compiles a schema of its own, and
// never sees a tool its parent was not shown.
func (v *toolView) narrow(auth authority.Authority) *toolView {
	out := &toolView{owner: map[authority.ID]Catalog{}, byWire: map[string]authority.ID{}, refused: maps.Clone(v.refused), decided: map[authority.ID]authority.Decision{}, err: v.err}
	for w, id := range v.byWire {
		if id == authority.Subagent {
			continue
		}
		d := auth.Decide(authority.Request{Capability: id})
		if !d.Allowed {
			out.refused[w], out.refused[string(id)] = d, d
			continue
		}
		out.owner[id], out.byWire[w], out.decided[id] = v.owner[id], id, d
	}
	for _, def := range v.defs {
		if _, ok := out.byWire[def.Name]; ok {
			out.defs = append(out.defs, def)
		}
	}
	if v.contracts != nil {
		out.contracts = v.contracts.Under(auth, func(id authority.ID) bool { _, ok := out.owner[id]; return ok })
	}
	return out
}

// with is v plus the tools of w, a view compiled apart, each owned by c
// instead of w's catalog: w's compiled contracts are shared, not compiled
// again. v and w are unchanged.
func (v *toolView) with(w *toolView, c Catalog) *toolView {
	out := &toolView{owner: maps.Clone(v.owner), byWire: maps.Clone(v.byWire), refused: maps.Clone(v.refused), decided: maps.Clone(v.decided), defs: slices.Clip(v.defs), err: v.err}
	maps.Copy(out.decided, w.decided)
	if out.err == nil {
		out.err = w.err
	}
	maps.Copy(out.refused, w.refused)
	for id := range w.owner {
		out.owner[id] = c
	}
	maps.Copy(out.byWire, w.byWire)
	out.defs = append(out.defs, w.defs...)
	if out.err == nil {
		out.contracts, out.err = v.contracts.Merge(w.contracts)
	}
	return out
}

// subagentView is the view of the subagent tool (sup's: its spec depends
// on the runtime's remotes alone), built and compiled at the first task
// with children and shared by every task after it.
func (r *Runtime) subagentView(sup Catalog) *toolView {
	r.subagentOnce.Do(func() {
		r.subagent = buildToolView(r.opts.Authority, r.opts.Secrets, &r.compiled, nil, []Catalog{sup})
	})
	return r.subagent
}

// agentTools are the tools an agent was admitted: its catalogs, the view
// of what they offer that its authority admits, and the dispatch
// snapshot that records it.
type agentTools struct {
	view     *toolView // the agent's tools, which its children's views narrow
	catalogs []Catalog
	owner    map[authority.ID]Catalog
	byWire   map[string]authority.ID
	// refused holds, by wire name and by capability ID, the decision that
	// kept a listed tool out of the admitted catalog, so a call to it is
	// recorded with the layer and rule that denied it.
	refused   map[string]authority.Decision
	contracts *authority.Contracts
	defs      []model.ToolDef
	// opened are the catalogs the task opened itself (OpenCatalogs'
	// sessions, the supervisor): the ones it closes when it settles. The
	// host's RuntimeOptions.Catalogs are never among them.
	opened []Catalog
	// shared: the agent's tools are the runtime's shared view (and its
	// subagent tool), so its dispatch snapshot is the runtime's one.
	shared bool
	// snapDigest is the digest of the agent's dispatch snapshot, once
	// recorded.
	snapDigest string
}
