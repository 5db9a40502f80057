package pablo

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

// ToolCatalog is a set of admitted tools of one task: native workspace
// tools, shell, MCP servers, Skills' skill.read, the subagent tool or a
// host's own. The engine lists their specs for the model and calls one only
// after the authority and the contract accepted the call.
type ToolCatalog interface {
	// Tools lists the catalog's tools. The list must not change during a
	// task.
	Tools() []ToolSpec
	// Call executes one accepted call: call.Arguments is the JSON the
	// contract validated against the tool's schema. Call never panics on bad
	// input and reports every outcome in the ToolResult.
	Call(ctx context.Context, call ToolInvocation) ToolResult
}

// HealthReporter is an optional capability of a ToolCatalog, named as
// http.Flusher is: a catalog whose tools follow live servers (an
// [*mcp.Catalog]) reports each server's health and what became of every
// tool it discovered. The runtime reads it to record the tools such a
// catalog kept out (and why), to put each MCP tool's live session in the
// dispatch snapshot, to count the stdio servers a task holds, and to know
// that the catalog's list may change between tasks. A host that wraps
// such a catalog forwards Health, or the runtime sees a catalog of plain
// tools. A catalog may have other named capabilities ([SandboxReporter],
// io.Closer); a wrapper forwards each one what it wraps has.
type HealthReporter interface {
	Health() []mcp.Health
}

// CodeArtifactChanged is the error code of the recoverable result a
// child's fs.read or fs.search returns when a file it was handed (an
// artifact handoff) no longer holds the handed revision: none of its bytes
// is returned, and the result's filesystem.error names the path, the
// handed_revision and the current_revision.
const CodeArtifactChanged = outcome.FailureCode(fstools.ArtifactChanged)

// workspaceCatalog adapts the native filesystem tools.
type workspaceCatalog struct {
	tools *fstools.Tools
	specs []authority.ToolSpec
}

func newWorkspaceCatalog(t *fstools.Tools) *workspaceCatalog {
	c := &workspaceCatalog{tools: t}
	for _, s := range t.Specs() {
		c.specs = append(c.specs, authority.ToolSpec{ID: s.ID, Description: s.Description, InputSchema: json.RawMessage(s.Schema)})
	}
	return c
}

func (c *workspaceCatalog) Tools() []authority.ToolSpec { return c.specs }

func (c *workspaceCatalog) Call(ctx context.Context, call authority.Call) ledger.ToolResult {
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
