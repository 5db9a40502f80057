// Package model defines the model types once: the conversation a model is
// given ([Request], [Message], [ToolDef]), the turn it returns ([Response],
// [ToolCall], [Usage], [FinishReason]), the [Model] seam that proposes, and
// the [Error] a failed call settles with.
//
// A host implements [Model] to plug in its own model, or wraps one the
// runtime built; the HTTP providers in internal/providers take and return
// the same values, so a request crosses from the run loop to the wire with
// no copy and no adapter.
package model

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/pabloagent/pablo/ledger/outcome"
)

// Role is the author of a message in a model conversation.
type Role string

// The roles a conversation holds. The trusted instruction prefix is not a
// message: it is Request.Instructions.
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
	// Reasoning is the provider state an assistant turn carried that
	// the provider needs back on the next request of the task (Anthropic
	// thinking blocks, OpenAI encrypted reasoning items).
	Reasoning []Reasoning `json:"reasoning,omitempty"`
}

// Reasoning is one opaque reasoning item a provider returned with a turn
// and requires back, unchanged, on the task's later requests. Provider
// names the wire that produced it: an adapter replays only its own and
// drops the others (a route that fell back to another provider). Data is
// the item as the provider sent it; it is never shown as text, never
// parsed by the runtime, and stays within the task that produced it.
type Reasoning struct {
	Provider string          `json:"provider"`
	Data     json.RawMessage `json:"data"`
}

// ToolCall is one tool call a model proposed. Name is the wire name the
// model saw (for example "fs_read"); the engine maps it back to a capability
// ID and decides it like any other request. Arguments is a JSON object.
// ID is the provider's: it only pairs the call with its tool result in the
// conversation, and may be empty or repeat an earlier one (the engine then
// sends the call back under one it makes up). The engine records every
// call under an ID of its own.
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

// Request is one request to a model: the trusted instruction prefix, the
// conversation so far, the admitted tools and the output allowance.
type Request struct {
	Instructions string
	Messages     []Message
	Tools        []ToolDef
	// MaxOutputTokens is the output allowance; zero sends none.
	MaxOutputTokens int64
	// turn, when not zero, is one more than the assistant messages the
	// task has added to Messages (after the conversation it continues), as
	// the run loop counts them, so a script model need not (see Turn and
	// SetTurn).
	turn int
}

// Turn is the turn the run loop numbered req with (one more than the
// assistant messages its task has added, the conversation it continues
// not counted), or 0 when it numbered none.
func Turn(req *Request) int { return req.turn }

// SetTurn numbers req as the run loop's turn n. The number is not part of
// the public request: a host that builds a Request never sets it.
func SetTurn(req *Request, n int) { req.turn = n }

// Usage is what a provider reported. A nil field is unknown.
type Usage struct {
	InputTokens      *uint64
	OutputTokens     *uint64
	CacheReadTokens  *uint64
	CacheWriteTokens *uint64
	// ReasoningTokens is a subset of OutputTokens: reported, never charged
	// apart from them.
	ReasoningTokens *uint64
	CostMicroUSD    *uint64
}

// FinishReason says why a model stopped.
type FinishReason string

// The finish reasons.
const (
	FinishStop      FinishReason = "stop"
	FinishLength    FinishReason = "length"
	FinishToolCalls FinishReason = "tool_calls"
)

// Response is a completed model turn.
type Response struct {
	// Text is the whole assistant text (the deltas concatenated).
	Text      string
	ToolCalls []ToolCall
	// Reasoning is the turn's opaque reasoning state; the run loop keeps
	// it on the assistant message it adds to the history.
	Reasoning []Reasoning
	// Usage is meaningful only when UsageReported.
	Usage         Usage
	UsageReported bool
	FinishReason  FinishReason
	// Model is the model the provider says answered (its response's model
	// or model version), which may differ from the requested ID (an alias
	// resolved to a snapshot); empty when the provider did not say.
	Model string
}

// Info identifies a model and what its adapter attests.
type Info struct {
	Provider string
	Model    string
	// TokenBound and CostBound are static per-call upper bounds; zero
	// means none. A hard token or cost ceiling needs them, unless the
	// model is a [Bounder], whose per-request bound is used instead.
	TokenBound uint64
	CostBound  uint64
}

// Model proposes: given a request it streams text deltas to emit, inline
// and in order, and returns the turn. It never acts; every tool call it
// proposes is decided and executed by the engine. A Model must be safe for
// concurrent use by many tasks.
type Model interface {
	Info() Info
	Generate(ctx context.Context, req *Request, emit func(delta string) error) (*Response, error)
}

// Error is a failed model call: its failure code and how certain it is
// that the request reached the provider.
type Error struct {
	Code     outcome.FailureCode
	Delivery outcome.Delivery
	// RetryClass says whether a route may fall back: not_sent,
	// rate_limited, service_unavailable or transport_uncertain; empty when
	// it may not.
	RetryClass string
	// RetryAfter is how long the provider asked the caller to wait before
	// trying again (its Retry-After header); zero when it did not say.
	RetryAfter time.Duration
	// Reason says what failed in words a person can act on: the
	// provider's HTTP status and its own message, or the transport error
	// and the endpoint. The runtime masks it and bounds it before the
	// task's outcome carries it; empty means the cause (Err) says it.
	Reason string
	Err    error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("model %s (%s): %v", e.Code, e.Delivery, e.Err)
	}
	return fmt.Sprintf("model %s (%s)", e.Code, e.Delivery)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }
