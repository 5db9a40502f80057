package engine

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/children"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/internal/memory"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/ledger/outcome"
)

// Seed 002's memory tools (options.memory) reach the loop as one catalog a
// root task opens when it starts, pinned to the commit its ref named then.
// A child calls through its root's catalogs, so it reads at the root's pin.

// The layer and rule a memory call that reads beyond the pin is gated by.
const (
	MemoryLayer         = "options.memory"
	RuleMemoryBeyondPin = "memory.beyond_pin"
)

// MemoryCatalog serves the granted memory tools of one task.
type MemoryCatalog struct {
	tools  *memory.Tools
	specs  []authority.ToolSpec
	grants map[string]memory.Grant
}

// NewMemoryCatalog adapts a task's pinned memory tools; grants are the
// tools' grants by capability ID, as the snapshot records them.
func NewMemoryCatalog(t *memory.Tools, grants map[string]memory.Grant) *MemoryCatalog {
	c := &MemoryCatalog{tools: t, grants: grants}
	for _, s := range t.Specs() {
		c.specs = append(c.specs, authority.ToolSpec{ID: authority.ID(s.ID), Description: s.Description, InputSchema: json.RawMessage(s.Schema)})
	}
	return c
}

// MemoryPinner is a catalog pinned to a memory commit: the dispatch
// snapshot and run.started record the pin.
type MemoryPinner interface {
	MemoryPin() event.MemoryPin
}

// MemoryPin is the commit every call of the catalog reads at.
func (c *MemoryCatalog) MemoryPin() event.MemoryPin {
	p := c.tools.Pin()
	return event.MemoryPin{Ref: p.Ref, Commit: p.Commit}
}

// Tools lists the granted memory tools.
func (c *MemoryCatalog) Tools() []authority.ToolSpec { return c.specs }

// ApprovalFor gates a call that reads another commit than the pin (a
// snapshot diff) behind an approval, unless the diff grant says refresh.
func (c *MemoryCatalog) ApprovalFor(call authority.Call) (layer, rule string) {
	if _, beyond := c.tools.ReadsBeyondPin(string(call.Tool), call.Arguments); beyond && !c.tools.Refresh() {
		return MemoryLayer, RuleMemoryBeyondPin
	}
	return "", ""
}

// SnapshotAttributes are what the dispatch snapshot records of a memory
// tool: the ref, the pinned commit and the grant's resources, so the
// snapshot's digest changes with the pin.
func (c *MemoryCatalog) SnapshotAttributes(id authority.ID) map[string]string {
	g, ok := c.grants[string(id)]
	if !ok {
		return nil
	}
	p := c.tools.Pin()
	attrs := map[string]string{"memory_ref": p.Ref, "memory_commit": p.Commit}
	setAttr(attrs, "memory_kinds", strings.Join(g.Scope.Kinds, ","))
	setAttr(attrs, "memory_paths", strings.Join(g.Scope.Paths, ","))
	if g.Refresh {
		attrs["memory_refresh"] = "true"
	}
	return attrs
}

// Call runs one accepted memory call.
func (c *MemoryCatalog) Call(ctx context.Context, call authority.Call) ledger.ToolResult {
	payload, err := c.tools.Call(ctx, string(call.Tool), call.Arguments)
	if err == nil {
		return ledger.Completed(map[string]any{"memory": payload})
	}
	var ae *memory.ArgumentError
	var me *memory.Error
	switch {
	case errors.As(err, &ae):
		return ledger.ToolResult{Status: outcome.ToolInvalidArguments, Code: outcome.FailInvalidToolArguments}
	case errors.Is(err, context.DeadlineExceeded):
		return ledger.ToolResult{Status: outcome.ToolTimedOut}
	case errors.Is(err, context.Canceled):
		return ledger.ToolResult{Status: outcome.ToolCancelled}
	case errors.As(err, &me) && me.Kind != memory.ErrRepository:
		e := map[string]any{"code": string(me.Code), "message": me.Error()}
		return ledger.ToolResult{Status: outcome.ToolRecoverableError, Output: map[string]any{"memory": map[string]any{"error": e}}}
	}
	return ledger.ToolResult{Status: outcome.ToolIOFailed, Code: outcome.FailToolExecution}
}

// memoryPinOf is the memory pin of a task's catalogs, or nil.
func memoryPinOf(cats []Catalog) *event.MemoryPin {
	for _, c := range cats {
		if mp, ok := c.(MemoryPinner); ok {
			p := mp.MemoryPin()
			return &p
		}
	}
	return nil
}

// within is c with every grant cut down to a child's memory scope: the
// same pin and index, never a wider grant.
func (c *MemoryCatalog) within(m *children.MemoryScope) *MemoryCatalog {
	t := c.tools.Within(memory.Scope{Kinds: m.Kinds, Paths: m.Paths})
	return &MemoryCatalog{tools: t, specs: c.specs, grants: t.Grants()}
}

// memoryScopeOf is the memory scope an agent whose view is v may pass on
// to a child: every kind and path any of its memory tools' grants
// reaches, or nil when it has no memory tool.
func memoryScopeOf(v *toolView) *children.MemoryScope {
	var m *children.MemoryScope
	for id, owner := range v.owner {
		mc, ok := owner.(*MemoryCatalog)
		if !ok {
			continue
		}
		g, ok := mc.grants[string(id)]
		if !ok {
			continue
		}
		if m == nil {
			m = &children.MemoryScope{Kinds: []string{}, Paths: []string{}}
		}
		m.Kinds = append(m.Kinds, g.Scope.Kinds...)
		m.Paths = append(m.Paths, g.Scope.Paths...)
	}
	if m == nil {
		return nil
	}
	for _, l := range []*[]string{&m.Kinds, &m.Paths} {
		slices.Sort(*l)
		*l = slices.Compact(*l)
		if slices.Contains(*l, "*") {
			*l = []string{"*"}
		}
	}
	return m
}

// narrowMemory gives a child whose memory scope is m its own memory
// catalog, cut down to m, in its catalogs and in v; nil m (a parent
// without memory tools) changes nothing.
func (s *step) narrowMemory(v *toolView, m *children.MemoryScope) {
	if m == nil {
		return
	}
	cats := slices.Clone(s.catalogs)
	for i, c := range cats {
		mc, ok := c.(*MemoryCatalog)
		if !ok {
			continue
		}
		mine := mc.within(m)
		cats[i] = mine
		for id, owner := range v.owner {
			if owner == c {
				v.owner[id] = mine
			}
		}
	}
	s.catalogs = cats
}
