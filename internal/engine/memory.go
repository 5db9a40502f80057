package engine

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/pabloagent/pablo/authority"
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
