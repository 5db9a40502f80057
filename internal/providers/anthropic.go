package providers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pabloagent/pablo/internal/textx"
	"github.com/pabloagent/pablo/model"
)

// Anthropic is the Anthropic Messages API, natively.
const Anthropic Provider = "anthropic"

// AnthropicVersion is the anthropic-version header every request carries.
const AnthropicVersion = "2023-06-01"

// DefaultAnthropicMaxTokens is the max_tokens a request sends when neither
// the request nor the model sets an output allowance: the Messages API
// requires one.
const DefaultAnthropicMaxTokens = 8192

// MinAnthropicThinkingBudget is the smallest budget_tokens the Messages
// API accepts for extended thinking.
const MinAnthropicThinkingBudget = 1024

// MaxAnthropicCacheBreakpoints is the API's limit of cache_control
// breakpoints per request.
const MaxAnthropicCacheBreakpoints = 4

// AnthropicOptions configure an Anthropic Messages model.
type AnthropicOptions struct {
	// Endpoint is the complete POST URL (…/v1/messages).
	Endpoint string
	// Model is the model ID sent on the wire.
	Model string
	// Secret is the API key, sent as x-api-key.
	Secret string
	// ThinkingBudget, when non-zero, enables extended thinking with this
	// budget_tokens (at least MinAnthropicThinkingBudget, below the
	// request's max_tokens).
	ThinkingBudget uint64
	// MaxOutputTokens caps every request's output allowance.
	MaxOutputTokens int64
	// PromptCaching places cache_control breakpoints on the stable
	// prefix: the last tool definition, the instructions and the newest
	// message (prompt_caching = "auto").
	PromptCaching bool
	// StreamIdleTimeout bounds the wait for the provider's next byte
	// (DefaultStreamIdleTimeout when zero).
	StreamIdleTimeout time.Duration
}

// AnthropicModel speaks the Anthropic Messages API, streamed.
type AnthropicModel struct {
	c    *Client
	opts AnthropicOptions
}

// NewAnthropic returns an Anthropic Messages model on client c.
func NewAnthropic(c *Client, opts AnthropicOptions) (*AnthropicModel, error) {
	if opts.Model == "" || opts.Endpoint == "" {
		return nil, errors.New("providers: an Anthropic model needs Endpoint and Model")
	}
	if opts.ThinkingBudget != 0 && opts.ThinkingBudget < MinAnthropicThinkingBudget {
		return nil, fmt.Errorf("providers: anthropic extended thinking needs budget_tokens >= %d, got %d", MinAnthropicThinkingBudget, opts.ThinkingBudget)
	}
	return &AnthropicModel{c: c, opts: opts}, nil
}

type anthCache struct {
	Type string `json:"type"`
}

var ephemeral = &anthCache{Type: "ephemeral"}

// anthBlock is one content block of a request message.
type anthBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   *string         `json:"content,omitempty"`
	// raw, when set, is sent instead of the fields (a thinking block
	// replayed exactly as it arrived).
	raw          json.RawMessage
	CacheControl *anthCache `json:"cache_control,omitempty"`
}

// MarshalJSON sends a replayed block unchanged.
func (b anthBlock) MarshalJSON() ([]byte, error) {
	if b.raw != nil {
		return b.raw, nil
	}
	type plain anthBlock
	return json.Marshal(plain(b))
}

type anthMessage struct {
	Role    string      `json:"role"`
	Content []anthBlock `json:"content"`
}

type anthTool struct {
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema"`
	CacheControl *anthCache      `json:"cache_control,omitempty"`
}

type anthThinking struct {
	Type         string `json:"type"`
	BudgetTokens uint64 `json:"budget_tokens"`
}

type anthRequest struct {
	Model     string        `json:"model"`
	MaxTokens int64         `json:"max_tokens"`
	System    []anthBlock   `json:"system,omitempty"`
	Messages  []anthMessage `json:"messages"`
	Tools     []anthTool    `json:"tools,omitempty"`
	Stream    bool          `json:"stream"`
	Thinking  *anthThinking `json:"thinking,omitempty"`
}

// MaxTokens is the max_tokens a request to m carries.
func (m *AnthropicModel) MaxTokens(req *model.Request) int64 {
	n := allowance(req, m.opts.MaxOutputTokens)
	if n == 0 {
		n = DefaultAnthropicMaxTokens
	}
	return n
}

func (m *AnthropicModel) body(req *model.Request) ([]byte, error) {
	w := anthRequest{Model: m.opts.Model, MaxTokens: m.MaxTokens(req), Stream: true, Messages: []anthMessage{}}
	if b := m.opts.ThinkingBudget; b > 0 {
		if int64(b) >= w.MaxTokens {
			return nil, &Error{Code: CodeUnsupported, Delivery: NotSent,
				Reason: fmt.Sprintf("anthropic extended thinking needs budget_tokens (%d) below max_tokens (%d); raise max_output_tokens or lower the reasoning budget", b, w.MaxTokens)}
		}
		w.Thinking = &anthThinking{Type: "enabled", BudgetTokens: b}
	}
	if req.Instructions != "" {
		w.System = []anthBlock{{Type: "text", Text: req.Instructions}}
	}
	// add appends blocks to a message of role, merging with the last
	// message when it has the same role: tool results and the user's
	// next words share one user turn, as the API requires.
	add := func(role string, blocks ...anthBlock) {
		if n := len(w.Messages); n > 0 && w.Messages[n-1].Role == role {
			w.Messages[n-1].Content = append(w.Messages[n-1].Content, blocks...)
			return
		}
		w.Messages = append(w.Messages, anthMessage{Role: role, Content: blocks})
	}
	for i := range req.Messages {
		msg := &req.Messages[i]
		switch msg.Role {
		case model.RoleUser:
			add("user", anthBlock{Type: "text", Text: msg.Content})
		case model.RoleAssistant:
			var blocks []anthBlock
			for _, r := range msg.Reasoning {
				// Thinking blocks go back first and unchanged, as the
				// API requires within a tool-use loop; another
				// provider's state is dropped.
				if r.Provider == string(Anthropic) && json.Valid(r.Data) {
					blocks = append(blocks, anthBlock{raw: r.Data})
				}
			}
			if msg.Content != "" {
				blocks = append(blocks, anthBlock{Type: "text", Text: msg.Content})
			}
			for _, tc := range msg.ToolCalls {
				args := tc.Arguments
				if len(args) == 0 {
					args = json.RawMessage(`{}`)
				}
				blocks = append(blocks, anthBlock{Type: "tool_use", ID: tc.ID, Name: tc.Name, Input: args})
			}
			if len(blocks) > 0 {
				add("assistant", blocks...)
			}
		case model.RoleTool:
			out := msg.Content
			add("user", anthBlock{Type: "tool_result", ToolUseID: msg.ToolCallID, Content: &out})
		default:
			return nil, &Error{Code: CodeUnsupported, Delivery: NotSent, Reason: fmt.Sprintf("message role %q has no Anthropic form", msg.Role)}
		}
	}
	for _, t := range req.Tools {
		params := t.Parameters
		if len(params) == 0 {
			params = json.RawMessage(`{"type":"object"}`)
		}
		w.Tools = append(w.Tools, anthTool{Name: t.Name, Description: t.Description, InputSchema: params})
	}
	if m.opts.PromptCaching {
		placeBreakpoints(&w)
	}
	b, err := json.Marshal(&w)
	if err != nil {
		return nil, &Error{Code: CodeInvalidArguments, Delivery: NotSent, Reason: "a tool schema or argument is not valid JSON"}
	}
	return b, nil
}

// placeBreakpoints marks the stable prefix for caching, in the API's
// prefix order (tools, system, messages): the last tool definition, the
// last instruction block, and the last block of the newest message, so
// the next request of the task reads everything this one wrote. Three
// breakpoints, under the API's four.
func placeBreakpoints(w *anthRequest) {
	if n := len(w.Tools); n > 0 {
		w.Tools[n-1].CacheControl = ephemeral
	}
	if n := len(w.System); n > 0 {
		w.System[n-1].CacheControl = ephemeral
	}
	for i := len(w.Messages) - 1; i >= 0; i-- {
		c := w.Messages[i].Content
		// A replayed thinking block cannot carry cache_control; mark the
		// last block that is ours.
		for j := len(c) - 1; j >= 0; j-- {
			if c[j].raw == nil {
				c[j].CacheControl = ephemeral
				return
			}
		}
	}
}

// Generate implements [Model].
func (m *AnthropicModel) Generate(ctx context.Context, req *model.Request, emit func(string) error) (*model.Response, error) {
	body, err := m.body(req)
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	if m.opts.Secret != "" {
		h.Set("x-api-key", m.opts.Secret)
	}
	h.Set("anthropic-version", AnthropicVersion)
	resp, err := m.c.post(ctx, m.opts.Endpoint, m.opts.Secret, h, body, m.opts.StreamIdleTimeout)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	p := &anthStream{emit: emit, secret: m.opts.Secret, blocks: map[int]*anthBlockState{}}
	r := NewSSEReader(resp.Body, m.c.limits.MaxFrameBytes, m.c.limits.MaxFrames)
	for !p.stopped {
		f, err := r.Next()
		if err != nil {
			if errors.Is(err, io.EOF) && p.stop != "" {
				// A stream that ends cleanly after message_delta's
				// stop_reason is complete: some compatible servers
				// never send message_stop.
				break
			}
			return nil, p.fail(ctx, frameError(err, m.c.limits))
		}
		if err := p.frame(f.Event, f.Data); err != nil {
			return nil, p.fail(ctx, err)
		}
	}
	return p.result()
}

// anthEvent is the union of the Messages stream's event fields.
type anthEvent struct {
	Type    string `json:"type"`
	Index   *int   `json:"index"`
	Message *struct {
		ID    string     `json:"id"`
		Model string     `json:"model"`
		Usage *anthUsage `json:"usage"`
	} `json:"message"`
	ContentBlock *struct {
		Type      string          `json:"type"`
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Text      *string         `json:"text"`
		Thinking  *string         `json:"thinking"`
		Signature *string         `json:"signature"`
		Data      *string         `json:"data"`
		Input     json.RawMessage `json:"input"`
	} `json:"content_block"`
	Delta *struct {
		Type        string  `json:"type"`
		Text        *string `json:"text"`
		PartialJSON *string `json:"partial_json"`
		Thinking    *string `json:"thinking"`
		Signature   *string `json:"signature"`
		StopReason  *string `json:"stop_reason"`
	} `json:"delta"`
	Usage *anthUsage `json:"usage"`
}

type anthUsage struct {
	InputTokens              *uint64 `json:"input_tokens"`
	OutputTokens             *uint64 `json:"output_tokens"`
	CacheCreationInputTokens *uint64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *uint64 `json:"cache_read_input_tokens"`
}

type anthBlockState struct {
	kind      string
	id, name  string
	text      strings.Builder
	signature strings.Builder
	data      string
	done      bool
}

// anthStream is the Messages event state machine: message_start, then
// content blocks (start, deltas, stop), message_delta with the stop
// reason and the output usage, message_stop.
type anthStream struct {
	streamState
	emit    func(string) error
	secret  string
	started bool
	stopped bool
	blocks  map[int]*anthBlockState
	order   []int
	calls   int
	text    strings.Builder
	stop    string
	model   string
	usage   *model.Usage
}

func (p *anthStream) frame(event string, data []byte) error {
	if err := checkShape(data); err != nil {
		return err
	}
	var ev anthEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return malformed("an event is not valid JSON of the Messages stream's shape")
	}
	if event != "" && event != ev.Type {
		return malformed("the SSE event name does not equal the JSON type")
	}
	if ev.Type == "error" {
		pe, _ := parseProviderError(data)
		return streamError("an error event", pe, p.secret, p.escaped)
	}
	if ev.Type == "ping" {
		return nil
	}
	if !p.started && ev.Type != "message_start" {
		return malformed("the first event must be message_start")
	}
	switch ev.Type {
	case "message_start":
		if p.started || ev.Message == nil {
			return malformed("message_start arrived twice or without its message")
		}
		p.started, p.model = true, textx.Cut(ev.Message.Model, 256)
		if ev.Message.Usage != nil {
			p.addUsage(ev.Message.Usage)
		}
		return nil
	case "content_block_start":
		return p.blockStart(&ev)
	case "content_block_delta":
		return p.blockDelta(&ev)
	case "content_block_stop":
		b, err := p.block(&ev)
		if err != nil {
			return err
		}
		b.done = true
		return nil
	case "message_delta":
		if ev.Delta == nil || ev.Delta.StopReason == nil {
			return malformed("message_delta without a stop_reason")
		}
		p.stop = textx.Cut(*ev.Delta.StopReason, 64)
		if ev.Usage != nil {
			p.addUsage(ev.Usage)
		}
		return nil
	case "message_stop":
		if p.stop == "" {
			return malformed("message_stop before message_delta's stop_reason")
		}
		p.stopped = true
		return nil
	}
	return unsupported("event %q is not part of the Messages stream", textx.Cut(ev.Type, 64))
}

// addUsage takes the usage of message_start (input and cache) and of
// message_delta (cumulative output; some servers repeat the input
// counts there): a later count replaces an earlier one.
func (p *anthStream) addUsage(u *anthUsage) {
	if p.usage == nil {
		p.usage = &model.Usage{}
	}
	if u.InputTokens != nil {
		p.usage.InputTokens = u.InputTokens
	}
	if u.OutputTokens != nil {
		p.usage.OutputTokens = u.OutputTokens
	}
	if u.CacheReadInputTokens != nil {
		p.usage.CacheReadTokens = u.CacheReadInputTokens
	}
	if u.CacheCreationInputTokens != nil {
		p.usage.CacheWriteTokens = u.CacheCreationInputTokens
	}
}

func (p *anthStream) blockStart(ev *anthEvent) error {
	if ev.Index == nil || ev.ContentBlock == nil {
		return malformed("content_block_start without index or content_block")
	}
	idx := *ev.Index
	if _, dup := p.blocks[idx]; dup || idx < 0 {
		return malformed("content block index %d is repeated or negative", idx)
	}
	if len(p.blocks) >= maxOutputItems {
		return malformed("more than %d content blocks", maxOutputItems)
	}
	cb := ev.ContentBlock
	b := &anthBlockState{kind: cb.Type}
	switch cb.Type {
	case "text":
		if cb.Text != nil && *cb.Text != "" {
			if err := p.textDelta(b, *cb.Text); err != nil {
				return err
			}
		}
	case "tool_use":
		if cb.Name == "" || len(cb.ID) > maxCallIDBytes || len(cb.Name) > maxCallIDBytes {
			return malformed("a tool_use block needs a name of 1..%d bytes and an id of at most %d", maxCallIDBytes, maxCallIDBytes)
		}
		p.calls++
		if p.calls > MaxToolCalls {
			return malformed("more than %d tool calls", MaxToolCalls)
		}
		b.id, b.name = cb.ID, cb.Name
		// The start carries input {} and the deltas the JSON text; a
		// non-empty input here is the whole of it.
		if in := strings.TrimSpace(string(cb.Input)); in != "" && in != "{}" && in != "null" {
			b.text.WriteString(in)
		}
		p.escaped = true
	case "thinking":
		if cb.Thinking != nil {
			b.text.WriteString(*cb.Thinking)
		}
		if cb.Signature != nil {
			b.signature.WriteString(*cb.Signature)
		}
	case "redacted_thinking":
		if cb.Data == nil {
			return malformed("a redacted_thinking block without data")
		}
		b.data = *cb.Data
	default:
		return unsupported("content block type %q is not represented", textx.Cut(cb.Type, 64))
	}
	p.blocks[idx] = b
	p.order = append(p.order, idx)
	return p.retain(len(cb.ID) + len(cb.Name) + len(b.data) + 64)
}

func (p *anthStream) block(ev *anthEvent) (*anthBlockState, error) {
	if ev.Index == nil {
		return nil, malformed("%s without index", textx.Cut(ev.Type, 64))
	}
	b, ok := p.blocks[*ev.Index]
	if !ok || b.done {
		return nil, malformed("%s for a content block that is not open", textx.Cut(ev.Type, 64))
	}
	return b, nil
}

func (p *anthStream) blockDelta(ev *anthEvent) error {
	b, err := p.block(ev)
	if err != nil {
		return err
	}
	d := ev.Delta
	if d == nil {
		return malformed("content_block_delta without delta")
	}
	want := map[string]string{"text_delta": "text", "input_json_delta": "tool_use", "thinking_delta": "thinking", "signature_delta": "thinking"}[d.Type]
	if want == "" {
		return unsupported("delta type %q is not represented", textx.Cut(d.Type, 64))
	}
	if want != b.kind {
		return malformed("a %s for a %s block", textx.Cut(d.Type, 64), b.kind)
	}
	switch d.Type {
	case "text_delta":
		if d.Text == nil {
			return malformed("text_delta without text")
		}
		return p.textDelta(b, *d.Text)
	case "input_json_delta":
		if d.PartialJSON == nil {
			return malformed("input_json_delta without partial_json")
		}
		b.text.WriteString(*d.PartialJSON)
		return p.retain(len(*d.PartialJSON))
	case "thinking_delta":
		if d.Thinking == nil {
			return malformed("thinking_delta without thinking")
		}
		// Thinking is private continuation: kept to send back, never
		// shown as text.
		b.text.WriteString(*d.Thinking)
		return p.retain(len(*d.Thinking))
	default:
		if d.Signature == nil {
			return malformed("signature_delta without signature")
		}
		b.signature.WriteString(*d.Signature)
		return p.retain(len(*d.Signature))
	}
}

func (p *anthStream) textDelta(b *anthBlockState, d string) error {
	if !utf8.ValidString(d) {
		return malformed("a text delta is not valid UTF-8")
	}
	if err := p.retain(2 * len(d)); err != nil {
		return err
	}
	b.text.WriteString(d)
	p.text.WriteString(d)
	if d == "" {
		return nil
	}
	p.escaped = true
	if err := p.emit(d); err != nil {
		return &Error{Code: CodeEventSink, Delivery: ResponseReceived, Escaped: true, Reason: "the event sink failed", Err: err}
	}
	return nil
}

func (p *anthStream) result() (*model.Response, error) {
	for _, idx := range p.order {
		if !p.blocks[idx].done {
			return nil, malformed("the message ended with an open content block")
		}
	}
	r := &model.Response{Text: p.text.String(), Model: p.model}
	switch p.stop {
	case "end_turn", "stop_sequence":
		r.FinishReason = model.FinishStop
	case "tool_use":
		r.FinishReason = model.FinishToolCalls
	case "max_tokens", "model_context_window_exceeded":
		r.FinishReason = model.FinishLength
	case "refusal":
		return nil, &Error{Code: CodeRejected, Delivery: ResponseReceived, Escaped: p.escaped, Reason: "the provider's content filter stopped the answer (stop_reason refusal)"}
	case "pause_turn":
		return nil, &Error{Code: CodeUnsupported, Delivery: ResponseReceived, Escaped: p.escaped, Reason: "the provider paused a server-tool turn (stop_reason pause_turn); server tools are not represented"}
	default:
		return nil, &Error{Code: CodeMalformed, Delivery: ResponseReceived, Escaped: p.escaped, Reason: fmt.Sprintf("unknown stop_reason %q", p.stop)}
	}
	for _, idx := range p.order {
		b := p.blocks[idx]
		switch b.kind {
		case "thinking":
			raw, _ := json.Marshal(struct {
				Type      string `json:"type"`
				Thinking  string `json:"thinking"`
				Signature string `json:"signature"`
			}{"thinking", b.text.String(), b.signature.String()})
			r.Reasoning = append(r.Reasoning, model.Reasoning{Provider: string(Anthropic), Data: raw})
		case "redacted_thinking":
			raw, _ := json.Marshal(struct {
				Type string `json:"type"`
				Data string `json:"data"`
			}{"redacted_thinking", b.data})
			r.Reasoning = append(r.Reasoning, model.Reasoning{Provider: string(Anthropic), Data: raw})
		case "tool_use":
			args, err := callArguments(b.text.String(), "tool_use "+textx.Cut(b.name, 64), "input", r.FinishReason == model.FinishLength, "stop_reason max_tokens")
			if err != nil {
				return nil, err
			}
			r.ToolCalls = append(r.ToolCalls, model.ToolCall{ID: b.id, Name: b.name, Arguments: args})
		}
	}
	if len(r.ToolCalls) > 0 && r.FinishReason == model.FinishStop {
		r.FinishReason = model.FinishToolCalls
	}
	if p.usage != nil {
		r.Usage, r.UsageReported = *p.usage, true
	}
	return r, nil
}
