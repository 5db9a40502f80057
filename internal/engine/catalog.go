package engine

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/pabloagent/pablo/ledger/outcome"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/internal/fstools"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/mcp"
)

// Catalog is a set of admitted tools of one task: the root's ToolCatalog,
// whose method set it repeats, so every ToolCatalog is one.
type Catalog interface {
	Tools() []authority.ToolSpec
	Call(ctx context.Context, call authority.Call) ledger.ToolResult
}

// HealthReporter is an optional capability of a Catalog: the root's
// HealthReporter, whose method it repeats.
type HealthReporter interface {
	Health() []mcp.Health
}

// SandboxReporter is an optional capability of a Catalog: the root's
// SandboxReporter, whose method it repeats.
type SandboxReporter interface {
	Sandbox(id authority.ID) (mcp.Sandbox, bool)
}

// WorkspaceCatalog adapts the native filesystem tools: the runtime's own
// catalog, which no host can build.
type WorkspaceCatalog struct {
	tools *fstools.Tools
	specs []authority.ToolSpec
}

// NewWorkspaceCatalog is the catalog of the native filesystem tools t.
func NewWorkspaceCatalog(t *fstools.Tools) *WorkspaceCatalog { return newWorkspaceCatalog(t) }

func newWorkspaceCatalog(t *fstools.Tools) *WorkspaceCatalog {
	c := &WorkspaceCatalog{tools: t}
	for _, s := range t.Specs() {
		c.specs = append(c.specs, authority.ToolSpec{ID: s.ID, Description: s.Description, InputSchema: json.RawMessage(s.Schema)})
	}
	return c
}

func (c *WorkspaceCatalog) Tools() []authority.ToolSpec { return c.specs }

func (c *WorkspaceCatalog) Call(ctx context.Context, call authority.Call) ledger.ToolResult {
	payload, err := c.tools.Call(ctx, call.Tool, call.Arguments)
	if err == nil {
		masked := 0
		switch r := payload.(type) {
		case *fstools.ReadResult:
			masked = r.Masked
		case *fstools.SearchResult:
			masked = r.Masked
		}
		return ledger.ToolResult{Status: outcome.ToolCompleted, Output: map[string]any{"filesystem": payload}, Masked: masked}
	}
	var ce *fstools.CleanupError
	if errors.As(err, &ce) {
		// The mutation committed, then cleanup failed: report the commit
		// and end the run with tool_cleanup.
		return ledger.ToolResult{Status: outcome.ToolCleanupFailed, Code: outcome.FailToolCleanup, Output: map[string]any{"filesystem": ce.Result}}
	}
	var fe *fstools.Error
	var de *fstools.DeniedError
	var le *fstools.LimitError
	var ae *fstools.ArgumentError
	switch {
	case errors.As(err, &fe):
		e := map[string]any{"code": string(fe.Code), "message": fe.Error()}
		if fe.Code == fstools.ArtifactChanged {
			// A handed file's bytes changed: say which file and which
			// revisions, as fields a host or model can act on.
			e["path"], e["handed_revision"], e["current_revision"] = fe.Path, fe.Handed, fe.Current
		}
		return ledger.ToolResult{Status: outcome.ToolRecoverableError, Output: map[string]any{"filesystem": map[string]any{"error": e}}}
	case errors.As(err, &de):
		return ledger.ToolResult{Status: outcome.ToolPolicyDenied, Rule: de.Decision.RuleID, Decision: de.Decision, Output: map[string]any{"error": map[string]any{"code": "policy_denied", "rule_id": de.Decision.RuleID}}}
	case errors.As(err, &le):
		status := outcome.ToolWorkLimit
		kind := outcome.LimitFilesystemWork
		if le.Kind == fstools.ToolOutputBytes {
			status, kind = outcome.ToolOutputLimit, outcome.LimitToolOutputBytes
		}
		r := ledger.ToolResult{Status: status, Limit: kind}
		if payload != nil {
			// A committed write whose result did not fit: still say so.
			r.Output = map[string]any{"filesystem": map[string]any{"committed": true}}
		}
		return r
	case errors.As(err, &ae):
		return ledger.ToolResult{Status: outcome.ToolInvalidArguments, Code: outcome.FailInvalidToolArguments}
	case errors.Is(err, context.DeadlineExceeded):
		return ledger.ToolResult{Status: outcome.ToolTimedOut}
	case errors.Is(err, context.Canceled):
		return ledger.ToolResult{Status: outcome.ToolCancelled}
	}
	return ledger.ToolResult{Status: outcome.ToolIOFailed, Code: outcome.FailToolExecution}
}
