package pablo

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/ledger"
)

// Role is the author of a message in a model conversation.
type Role string

// The roles a conversation holds. The trusted instruction prefix is not a
// message: it is ModelRequest.Instructions.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one entry of a model conversation.
type Message struct {
	Role    Role   `json:"role"`
	Content string `json:"content,omitempty"`
	// ToolCalls are the calls an assistant message proposed.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID ties a tool message to the call it answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
}

// ToolCall is one tool call a model proposed. Name is the wire name the
// model saw (for example "fs_read"); the engine maps it back to a capability
// ID and decides it like any other request.
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// ToolDef is a tool as a model sees it: a wire name, a description (untrusted
// text from its provider) and a closed JSON Schema for its arguments.
type ToolDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// ModelRequest is one request to a model: the trusted instruction prefix,
// the conversation so far, the admitted tools and the output allowance.
type ModelRequest struct {
	Instructions    string
	Messages        []Message
	Tools           []ToolDef
	MaxOutputTokens int64
	// turn, when not zero, is one more than the assistant messages in
	// Messages, as the loop counts them, so a script model need not.
	turn int
}

// ModelUsage is what a provider reported. A nil field is unknown.
type ModelUsage struct {
	InputTokens      *uint64
	OutputTokens     *uint64
	CacheReadTokens  *uint64
	CacheWriteTokens *uint64
	CostMicroUSD     *uint64
}

// FinishReason says why a model stopped.
type FinishReason string

// The finish reasons.
const (
	FinishStop      FinishReason = "stop"
	FinishLength    FinishReason = "length"
	FinishToolCalls FinishReason = "tool_calls"
)

// ModelResponse is a completed model turn.
type ModelResponse struct {
	// Text is the whole assistant text (the deltas concatenated).
	Text      string
	ToolCalls []ToolCall
	// Usage is meaningful only when UsageReported.
	Usage         ModelUsage
	UsageReported bool
	FinishReason  FinishReason
}

// ModelInfo identifies a model and what its adapter attests.
type ModelInfo struct {
	Provider string
	Model    string
	// TokenBound and CostBound are attested per-call upper bounds; zero
	// means none. A hard token or cost ceiling needs them.
	TokenBound uint64
	CostBound  uint64
}

// Model proposes: given a request it streams text deltas to emit, inline
// and in order, and returns the turn. It never acts; every tool call it
// proposes is decided and executed by the engine. A Model must be safe for
// concurrent use by many tasks.
type Model interface {
	Info() ModelInfo
	Generate(ctx context.Context, req *ModelRequest, emit func(delta string) error) (*ModelResponse, error)
}

// ModelError is a failed model call: its failure code and how certain it is
// that the request reached the provider.
type ModelError struct {
	Code     ledger.FailureCode
	Delivery ledger.Delivery
	// RetryClass says whether a route may fall back: not_sent,
	// rate_limited, service_unavailable or transport_uncertain; empty when
	// it may not.
	RetryClass string
	Err        error
}

func (e *ModelError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("model %s (%s): %v", e.Code, e.Delivery, e.Err)
	}
	return fmt.Sprintf("model %s (%s)", e.Code, e.Delivery)
}

func (e *ModelError) Unwrap() error { return e.Err }

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
