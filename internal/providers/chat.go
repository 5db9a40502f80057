package providers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pabloagent/pablo/internal/textx"
	"github.com/pabloagent/pablo/model"
)

// MaxToolCalls bounds the tool calls of one response.
const MaxToolCalls = 128

// ChatOptions configure a Chat Completions model.
type ChatOptions struct {
	// Provider is OpenAICompatible, Vercel or OpenRouter; it selects the
	// usage and cost mapping.
	Provider Provider
	// Endpoint is the complete POST URL (…/chat/completions).
	Endpoint string
	// Model is the model ID sent on the wire.
	Model string
	// Secret is the credential value; empty sends no credential header.
	Secret string
	// AuthHeader and AuthScheme shape the credential header (default
	// "Authorization" and "bearer"; "raw" sends the value alone).
	AuthHeader string
	AuthScheme string
	// ReasoningEffort, when set, is sent as the reasoning effort.
	ReasoningEffort string
	// ReasoningBudget, when non-zero, is sent as a reasoning token budget
	// (vercel and openrouter only).
	ReasoningBudget uint64
	// MaxOutputTokens caps every request's output allowance (0: the
	// request's own).
	MaxOutputTokens int64
	// StreamIdleTimeout bounds the wait for the provider's next byte
	// (DefaultStreamIdleTimeout when zero).
	StreamIdleTimeout time.Duration
	// PromptCaching asks the Vercel gateway for automatic prompt caching
	// (providerOptions.gateway.caching = "auto", the reference's
	// prompt_caching = "auto"); Vercel only.
	PromptCaching bool
}

// ChatModel speaks OpenAI Chat Completions with SSE streaming.
type ChatModel struct {
	c    *Client
	opts ChatOptions
}

// NewChat returns a Chat Completions model on client c.
func NewChat(c *Client, opts ChatOptions) (*ChatModel, error) {
	switch opts.Provider {
	case OpenAICompatible, Vercel, OpenRouter:
	default:
		return nil, fmt.Errorf("providers: %q does not speak Chat Completions; use openai_compatible, vercel or openrouter", opts.Provider)
	}
	if opts.Model == "" || opts.Endpoint == "" {
		return nil, errors.New("providers: a Chat Completions model needs Endpoint and Model")
	}
	if opts.ReasoningBudget > 0 && opts.Provider == OpenAICompatible {
		return nil, errors.New("providers: openai_compatible takes a reasoning effort, not a token budget")
	}
	if opts.PromptCaching && opts.Provider != Vercel {
		return nil, fmt.Errorf("providers: automatic prompt caching requires Vercel Chat Completions, not %s", opts.Provider)
	}
	return &ChatModel{c: c, opts: opts}, nil
}

// Generate implements [Model].
func (m *ChatModel) Generate(ctx context.Context, req *model.Request, emit func(string) error) (*model.Response, error) {
	body, err := m.body(req)
	if err != nil {
		return nil, err
	}
	resp, err := m.c.post(ctx, m.opts.Endpoint, m.opts.Secret, authHeader(m.opts.AuthHeader, m.opts.AuthScheme, m.opts.Secret), body, m.opts.StreamIdleTimeout)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	p := newChatStream(m.opts.Provider, emit)
	p.secret = m.opts.Secret
	r := NewSSEReader(resp.Body, m.c.limits.MaxFrameBytes, m.c.limits.MaxFrames)
	for !p.done {
		f, err := r.Next()
		if err != nil {
			if errors.Is(err, io.EOF) && p.finish != "" {
				// A stream that ends cleanly after its finish reason is
				// complete: local servers (and some gateways) never send
				// the [DONE] terminator. An event cut mid-way is still a
				// cut stream (ErrTruncated, not io.EOF).
				break
			}
			return nil, p.fail(ctx, frameError(err, m.c.limits))
		}
		if err := p.frame(f.Data); err != nil {
			return nil, p.fail(ctx, err)
		}
	}
	return p.result()
}

// wire types of the request.
type chatMessage struct {
	Role       string         `json:"role"`
	Content    *string        `json:"content"`
	ToolCalls  []chatToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

type chatToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function chatFunction `json:"function"`
}

type chatFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type chatTool struct {
	Type     string      `json:"type"`
	Function chatToolDef `json:"function"`
}

type chatToolDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

type chatRequest struct {
	Model           string               `json:"model"`
	Messages        []chatMessage        `json:"messages"`
	Tools           []chatTool           `json:"tools,omitempty"`
	ToolChoice      string               `json:"tool_choice,omitempty"`
	Stream          bool                 `json:"stream"`
	StreamOptions   *streamOptions       `json:"stream_options,omitempty"`
	MaxTokens       int64                `json:"max_tokens,omitempty"`
	ReasoningEffort string               `json:"reasoning_effort,omitempty"`
	Reasoning       *chatReasoning       `json:"reasoning,omitempty"`
	ProviderOptions *chatProviderOptions `json:"providerOptions,omitempty"`
}

// chatProviderOptions is the Vercel gateway's providerOptions: caching
// "auto" asks it to place the provider's cache markers.
type chatProviderOptions struct {
	Gateway struct {
		Caching string `json:"caching"`
	} `json:"gateway"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type chatReasoning struct {
	Effort    string `json:"effort,omitempty"`
	MaxTokens uint64 `json:"max_tokens,omitempty"`
}

func (m *ChatModel) body(req *model.Request) ([]byte, error) {
	w := chatRequest{Model: m.opts.Model, Stream: true, MaxTokens: allowance(req, m.opts.MaxOutputTokens)}
	if m.opts.PromptCaching {
		w.ProviderOptions = &chatProviderOptions{}
		w.ProviderOptions.Gateway.Caching = "auto"
	}
	// OpenRouter deprecated stream_options.include_usage and always sends
	// usage; the others need it asked for.
	if m.opts.Provider != OpenRouter {
		w.StreamOptions = &streamOptions{IncludeUsage: true}
	}
	switch {
	case m.opts.Provider == OpenAICompatible:
		w.ReasoningEffort = m.opts.ReasoningEffort
	case m.opts.ReasoningEffort != "" || m.opts.ReasoningBudget > 0:
		w.Reasoning = &chatReasoning{Effort: m.opts.ReasoningEffort, MaxTokens: m.opts.ReasoningBudget}
	}
	if req.Instructions != "" {
		s := req.Instructions
		w.Messages = append(w.Messages, chatMessage{Role: "system", Content: &s})
	}
	for i := range req.Messages {
		msg := &req.Messages[i]
		cm := chatMessage{Role: string(msg.Role), ToolCallID: msg.ToolCallID}
		switch msg.Role {
		case model.RoleUser, model.RoleTool:
			c := msg.Content
			cm.Content = &c
		case model.RoleAssistant:
			if msg.Content != "" || len(msg.ToolCalls) == 0 {
				c := msg.Content
				cm.Content = &c
			}
			for _, tc := range msg.ToolCalls {
				args := string(tc.Arguments)
				if args == "" {
					args = "{}"
				}
				cm.ToolCalls = append(cm.ToolCalls, chatToolCall{ID: tc.ID, Type: "function", Function: chatFunction{Name: tc.Name, Arguments: args}})
			}
		default:
			return nil, &Error{Code: CodeUnsupported, Delivery: NotSent, Reason: fmt.Sprintf("message role %q has no Chat Completions form", msg.Role)}
		}
		w.Messages = append(w.Messages, cm)
	}
	for _, t := range req.Tools {
		params := t.Parameters
		if len(params) == 0 {
			params = json.RawMessage(`{"type":"object"}`)
		}
		w.Tools = append(w.Tools, chatTool{Type: "function", Function: chatToolDef{Name: t.Name, Description: t.Description, Parameters: params}})
	}
	if len(w.Tools) > 0 {
		w.ToolChoice = "auto"
	}
	b, err := json.Marshal(&w)
	if err != nil {
		return nil, &Error{Code: CodeInvalidArguments, Delivery: NotSent, Reason: "a tool schema or argument is not valid JSON"}
	}
	return b, nil
}

// chatChunk is one streamed chunk.
type chatChunk struct {
	Choices []struct {
		Index        int       `json:"index"`
		Delta        chatDelta `json:"delta"`
		FinishReason *string   `json:"finish_reason"`
	} `json:"choices"`
	Usage *chatUsage      `json:"usage"`
	Error json.RawMessage `json:"error"`
	Model string          `json:"model"`
}

type chatDelta struct {
	Content   *string `json:"content"`
	Refusal   *string `json:"refusal"`
	ToolCalls []struct {
		Index    *int   `json:"index"`
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
	FunctionCall json.RawMessage `json:"function_call"`
	Audio        json.RawMessage `json:"audio"`
	Images       json.RawMessage `json:"images"`
}

type chatUsage struct {
	PromptTokens        *uint64 `json:"prompt_tokens"`
	CompletionTokens    *uint64 `json:"completion_tokens"`
	PromptTokensDetails *struct {
		CachedTokens     *uint64 `json:"cached_tokens"`
		CacheWriteTokens *uint64 `json:"cache_write_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails *struct {
		ReasoningTokens *uint64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
	Cost json.Number `json:"cost"`
}

// chatStream is the Chat Completions stream state machine: it consumes
// each frame's data and calls emit for each text delta.
type chatStream struct {
	streamState
	provider Provider
	secret   string // masked out of the provider's words
	emit     func(string) error
	text     strings.Builder
	calls    []model.ToolCall
	args     [][]byte // each call's arguments, as streamed
	byIndex  map[int]int
	finish   string
	usage    *model.Usage
	done     bool
	model    string
}

func newChatStream(p Provider, emit func(string) error) *chatStream {
	return &chatStream{provider: p, emit: emit, byIndex: map[int]int{}}
}

// frame consumes one SSE data payload.
func (p *chatStream) frame(data []byte) error {
	if string(data) == "[DONE]" {
		if p.finish == "" {
			return malformed("the stream ended without a finish reason")
		}
		p.done = true
		return nil
	}
	if !utf8.Valid(data) {
		data = blankInvalidCallIDs(data)
	}
	if err := checkShape(data); err != nil {
		return err
	}
	var c chatChunk
	if err := json.Unmarshal(data, &c); err != nil {
		return malformed("a chunk is not valid JSON of the Chat Completions shape")
	}
	if len(c.Error) > 0 && string(c.Error) != "null" {
		// An in-stream error: its message is kept masked and bounded;
		// before any output it may be retried (overloaded, rate limit).
		pe, _ := parseProviderError([]byte(`{"error":` + string(c.Error) + `}`))
		return streamError("an error", pe, p.secret, p.escaped)
	}
	if c.Model != "" {
		p.model = textx.Cut(c.Model, 256)
	}
	if c.Usage != nil {
		u, err := p.mapUsage(c.Usage)
		if err != nil {
			return err
		}
		p.usage = u
	}
	for i := range c.Choices {
		ch := &c.Choices[i]
		if ch.Index != 0 {
			return unsupported("the response holds more than one choice")
		}
		if err := p.delta(&ch.Delta); err != nil {
			return err
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			if p.finish != "" && p.finish != *ch.FinishReason {
				return malformed("two different finish reasons")
			}
			p.finish = *ch.FinishReason
		}
	}
	return nil
}

// blankInvalidCallIDs returns data with each tool-call ID whose bytes are
// not UTF-8 written as "", a missing ID the run loop makes one up for
// (local servers have sent such IDs), when those IDs hold all of data's
// invalid bytes. Otherwise it returns data as it is, and checkShape
// refuses the frame: invalid bytes anywhere else (text, a name, the
// arguments, a key) stay a malformed stream, never replaced.
func blankInvalidCallIDs(data []byte) []byte {
	var c struct {
		Choices []struct {
			Delta struct {
				ToolCalls []struct {
					ID json.RawMessage `json:"id"`
				} `json:"tool_calls"`
			} `json:"delta"`
		} `json:"choices"`
	}
	// The decoder takes invalid bytes; a raw message keeps them.
	if json.Unmarshal(data, &c) != nil {
		return data
	}
	ids := 0
	for _, ch := range c.Choices {
		for _, tc := range ch.Delta.ToolCalls {
			if !utf8.Valid(tc.ID) {
				ids++
			}
		}
	}
	if ids == 0 {
		return data
	}
	// Every invalid ID is a string of its own in data, so when the
	// strings holding invalid bytes are exactly as many, they are the IDs.
	out := make([]byte, 0, len(data))
	blanked := 0
	for i := 0; i < len(data); i++ {
		if data[i] != '"' {
			out = append(out, data[i])
			continue
		}
		j := i + 1
		for j < len(data) && data[j] != '"' {
			if data[j] == '\\' {
				j++
			}
			j++
		}
		if j >= len(data) {
			return data
		}
		if s := data[i : j+1]; utf8.Valid(s) {
			out = append(out, s...)
		} else {
			out = append(out, '"', '"')
			blanked++
		}
		i = j
	}
	if blanked != ids {
		return data
	}
	return out
}

func (p *chatStream) delta(d *chatDelta) error {
	if d.Refusal != nil && *d.Refusal != "" {
		return unsupported("the model refused (a refusal is not represented)")
	}
	for _, raw := range []json.RawMessage{d.FunctionCall, d.Audio, d.Images} {
		if len(raw) > 0 && string(raw) != "null" && string(raw) != "[]" {
			return unsupported("the response holds audio, images or a legacy function_call")
		}
	}
	if p.finish != "" && ((d.Content != nil && *d.Content != "") || len(d.ToolCalls) > 0) {
		return malformed("content arrived after the finish reason")
	}
	if d.Content != nil && *d.Content != "" {
		if !utf8.ValidString(*d.Content) {
			return malformed("a text delta is not valid UTF-8")
		}
		p.text.WriteString(*d.Content)
		p.escaped = true
		if err := p.emit(*d.Content); err != nil {
			return &Error{Code: CodeEventSink, Delivery: ResponseReceived, Escaped: true, Reason: "the event sink failed", Err: err}
		}
	}
	for _, tc := range d.ToolCalls {
		idx := len(p.calls)
		if tc.Index != nil {
			idx = *tc.Index
		} else if tc.ID == "" && len(p.calls) > 0 {
			idx = len(p.calls) - 1
		}
		if idx < 0 || idx >= MaxToolCalls {
			return malformed("tool call index %d is outside 0..%d", idx, MaxToolCalls-1)
		}
		pos, ok := p.byIndex[idx]
		if !ok {
			if tc.Function.Name == "" {
				return malformed("a tool call starts without a function name")
			}
			if tc.Type != "" && tc.Type != "function" {
				return unsupported("tool call type %q is not function", textx.Cut(tc.Type, 32))
			}
			id := tc.ID
			if id == "" {
				id = "call_" + strconv.Itoa(idx)
			}
			pos = len(p.calls)
			p.byIndex[idx] = pos
			p.calls = append(p.calls, model.ToolCall{ID: id, Name: tc.Function.Name})
			p.args = append(p.args, nil)
			p.escaped = true
		} else if tc.ID != "" && tc.ID != p.calls[pos].ID || tc.Function.Name != "" && tc.Function.Name != p.calls[pos].Name {
			return malformed("a tool call changed its ID or name mid-stream")
		}
		p.args[pos] = append(p.args[pos], tc.Function.Arguments...)
	}
	return nil
}

func (p *chatStream) mapUsage(u *chatUsage) (*model.Usage, error) {
	out := &model.Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens}
	if d := u.PromptTokensDetails; d != nil {
		out.CacheReadTokens = d.CachedTokens
		if p.provider != OpenAICompatible {
			out.CacheWriteTokens = d.CacheWriteTokens
		}
	}
	if d := u.CompletionTokensDetails; d != nil {
		out.ReasoningTokens = d.ReasoningTokens
	}
	if u.Cost != "" && p.provider != OpenAICompatible {
		c, err := CostMicroUSD(string(u.Cost))
		if err != nil {
			return nil, malformed("usage.cost is not a non-negative decimal within range")
		}
		out.CostMicroUSD = &c
	}
	return out, nil
}

// result is the completed turn.
func (p *chatStream) result() (*model.Response, error) {
	r := &model.Response{Text: p.text.String(), Model: p.model}
	switch p.finish {
	case "stop":
		r.FinishReason = model.FinishStop
	case "length":
		r.FinishReason = model.FinishLength
	case "tool_calls":
		r.FinishReason = model.FinishToolCalls
	case "content_filter":
		return nil, &Error{Code: CodeRejected, Delivery: ResponseReceived, Escaped: p.escaped, Reason: "the provider's content filter stopped the answer (finish_reason content_filter)"}
	default:
		return nil, &Error{Code: CodeMalformed, Delivery: ResponseReceived, Escaped: p.escaped, Reason: fmt.Sprintf("unknown finish reason %q", textx.Cut(p.finish, 32))}
	}
	for i := range p.calls {
		args, err := callArguments(string(p.args[i]), fmt.Sprintf("tool call %d (%s)", i, textx.Cut(p.calls[i].Name, 64)), "arguments", p.finish == "length", "finish_reason length")
		if err != nil {
			return nil, err
		}
		p.calls[i].Arguments = args
	}
	if len(p.calls) > 0 {
		// Some servers say "stop" for a turn that proposed tools.
		r.FinishReason = model.FinishToolCalls
		r.ToolCalls = p.calls
	} else if p.finish == "tool_calls" {
		return nil, &Error{Code: CodeMalformed, Delivery: ResponseReceived, Escaped: p.escaped, Reason: "finish reason tool_calls without a tool call"}
	}
	if p.usage != nil {
		r.Usage, r.UsageReported = *p.usage, true
	}
	return r, nil
}
