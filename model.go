package pablo

import (
	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/internal/model"
)

// The model types are defined once, in internal/model, and shared with the
// HTTP providers; these are their public names.
type (
	// Role is the author of a message in a model conversation.
	Role = model.Role
	// Message is one entry of a model conversation.
	Message = model.Message
	// ToolCall is one tool call a model proposed. Name is the wire name
	// the model saw (for example "fs_read"); the engine maps it back to a
	// capability ID and decides it like any other request.
	ToolCall = model.ToolCall
	// ToolDef is a tool as a model sees it: a wire name, a description
	// (untrusted text from its provider) and a closed JSON Schema for its
	// arguments.
	ToolDef = model.ToolDef
	// ModelRequest is one request to a model: the trusted instruction
	// prefix, the conversation so far, the admitted tools and the output
	// allowance.
	ModelRequest = model.Request
	// ModelUsage is what a provider reported. A nil field is unknown.
	ModelUsage = model.Usage
	// FinishReason says why a model stopped.
	FinishReason = model.FinishReason
	// ModelResponse is a completed model turn.
	ModelResponse = model.Response
	// ModelInfo identifies a model and what its adapter attests.
	ModelInfo = model.Info
	// Model proposes: given a request it streams text deltas to emit,
	// inline and in order, and returns the turn. It never acts; every tool
	// call it proposes is decided and executed by the engine. A Model must
	// be safe for concurrent use by many tasks.
	Model = model.Model
	// ModelError is a failed model call: its failure code and how certain
	// it is that the request reached the provider.
	ModelError = model.Error
)

// The roles a conversation holds. The trusted instruction prefix is not a
// message: it is ModelRequest.Instructions.
const (
	RoleUser      = model.RoleUser
	RoleAssistant = model.RoleAssistant
	RoleTool      = model.RoleTool
)

// The finish reasons.
const (
	FinishStop      = model.FinishStop
	FinishLength    = model.FinishLength
	FinishToolCalls = model.FinishToolCalls
)

// wireName is the name a model sees for a capability: dots become
// underscores for native and host tools; MCP tools get "mcp_" and the first
// 24 bytes of the SHA-256 of their qualified ID in hex.
func wireName(id authority.ID) string {
	if id.Kind() == authority.KindMCPTool {
		sum := sha256Tag([]byte(id))
		return "mcp_" + sum[len("sha256:"):len("sha256:")+48]
	}
	return authority.WireName(id)
}
