package pablo

import (
	"context"

	"github.com/pabloagent/pablo/ledger/outcome"

	"github.com/pabloagent/pablo/authority"
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
const CodeArtifactChanged outcome.FailureCode = "artifact_changed"

// SandboxReporter is an optional capability of a ToolCatalog, named as
// http.Flusher is: a catalog whose tools run in processes it starts in a
// sandbox (shell.run, an [*mcp.Catalog]'s stdio servers) says which
// sandbox each tool runs in, "off" included. The runtime records it in the
// call's decision, its tool.started event and the dispatch snapshot. A
// host that wraps such a catalog forwards Sandbox (embedding the
// SandboxReporter it wraps does).
type SandboxReporter interface {
	Sandbox(id authority.ID) (mcp.Sandbox, bool)
}
