package providers

import (
	"context"
	"encoding/json"
)

// Role is the author of a message.
type Role string

// The roles of a conversation. The instruction prefix is Request.Instructions.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one entry of a conversation.
type Message struct {
	Role    Role
	Content string
	// ToolCalls are the calls an assistant message proposed.
	ToolCalls []ToolCall
	// ToolCallID ties a tool message to the call it answers.
	ToolCallID string
}

// ToolCall is one proposed tool call. Name is the wire name; Arguments is
// a JSON object.
type ToolCall struct {
	ID        string
	Name      string
	Arguments json.RawMessage
}

// ToolDef is a tool as the model sees it.
type ToolDef struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

// Request is one model request.
type Request struct {
	Instructions string
	Messages     []Message
	Tools        []ToolDef
	// MaxOutputTokens is the output allowance; zero sends none.
	MaxOutputTokens int64
}

// Usage is what a provider reported; a nil field is unknown.
type Usage struct {
	InputTokens      *uint64
	OutputTokens     *uint64
	CacheReadTokens  *uint64
	CacheWriteTokens *uint64
	// ReasoningTokens is a subset of OutputTokens.
	ReasoningTokens *uint64
	CostMicroUSD    *uint64
}

// Finish says why a model stopped.
type Finish string

// The finish reasons.
const (
	FinishStop      Finish = "stop"
	FinishLength    Finish = "length"
	FinishToolCalls Finish = "tool_calls"
)

// Response is one completed model turn.
type Response struct {
	// Text is every text delta, concatenated.
	Text      string
	ToolCalls []ToolCall
	// Usage is meaningful only when UsageReported.
	Usage         Usage
	UsageReported bool
	Finish        Finish
}

// Model is one configured model behind one wire protocol. Generate calls
// emit for every text delta, inline and in order, before it reads further;
// an error from emit stops the stream and is returned wrapped in an [*Error]
// whose Escaped field is true. A Model is safe for concurrent use.
type Model interface {
	Generate(ctx context.Context, req *Request, emit func(delta string) error) (*Response, error)
}

// Provider names a wire adapter, as configuration spells it.
type Provider string

// The providers.
const (
	OpenAICompatible Provider = "openai_compatible"
	Vercel           Provider = "vercel"
	OpenRouter       Provider = "openrouter"
	OpenResponses    Provider = "open_responses"
)
