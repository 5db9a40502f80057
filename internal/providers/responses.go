package providers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pabloagent/pablo/internal/textx"
	"github.com/pabloagent/pablo/model"
)

// CapabilityProfile is the one Open Responses profile this adapter speaks.
const CapabilityProfile = "open-responses-text-tools-v1"

// Open Responses bounds (per response).
const (
	maxOutputItems    = 4096
	maxIDBytes        = 256
	maxCallIDBytes    = 64
	maxRetainedBytes  = 32 << 20
	minResponseOutput = 16
)

// OpenAI is the OpenAI Responses API, natively: the Open Responses wire
// plus reasoning continuity (encrypted reasoning items kept per task and
// replayed).
const OpenAI Provider = "openai"

// ResponsesOptions configure an Open Responses model.
type ResponsesOptions struct {
	// Provider is OpenResponses (the default) or OpenAI. OpenAI asks for
	// reasoning.encrypted_content, returns each reasoning item as opaque
	// model.Reasoning and sends it back, unchanged, before the assistant
	// turn it preceded on the task's later requests (store is false, so
	// the provider keeps nothing between requests).
	Provider Provider
	// Endpoint is the complete POST URL; "/responses" is never appended.
	Endpoint string
	Model    string
	Secret   string
	// AuthHeader and AuthScheme shape the credential header (default
	// "Authorization" and "bearer").
	AuthHeader string
	AuthScheme string
	// ReasoningEffort is none, low, medium, high or xhigh; empty omits it.
	ReasoningEffort string
	// MaxOutputTokens caps every request's output allowance.
	MaxOutputTokens int64
	// StreamIdleTimeout bounds the wait for the provider's next byte
	// (DefaultStreamIdleTimeout when zero).
	StreamIdleTimeout time.Duration
}

// ResponsesModel speaks the Responses-style streaming API (the pinned
// open-responses-text-tools-v1 subset): text and function calls only.
type ResponsesModel struct {
	c    *Client
	opts ResponsesOptions
}

// NewResponses returns an Open Responses model on client c.
func NewResponses(c *Client, opts ResponsesOptions) (*ResponsesModel, error) {
	if opts.Model == "" || opts.Endpoint == "" {
		return nil, errors.New("providers: an Open Responses model needs Endpoint and Model")
	}
	switch opts.Provider {
	case "":
		opts.Provider = OpenResponses
	case OpenResponses, OpenAI:
	default:
		return nil, fmt.Errorf("providers: %q does not speak the Responses wire; use open_responses or openai", opts.Provider)
	}
	switch opts.ReasoningEffort {
	case "", "none", "low", "medium", "high", "xhigh":
	default:
		return nil, fmt.Errorf("providers: open_responses supports reasoning none, low, medium, high or xhigh, not %q", opts.ReasoningEffort)
	}
	return &ResponsesModel{c: c, opts: opts}, nil
}

type respContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type respItem struct {
	// raw, when set, is sent instead of the fields (a reasoning item
	// replayed exactly as it arrived).
	raw       json.RawMessage
	Type      string        `json:"type"`
	Role      string        `json:"role,omitempty"`
	Content   []respContent `json:"content,omitempty"`
	CallID    string        `json:"call_id,omitempty"`
	Name      string        `json:"name,omitempty"`
	Arguments string        `json:"arguments,omitempty"`
	Output    *string       `json:"output,omitempty"`
}

// MarshalJSON sends a replayed item unchanged.
func (it respItem) MarshalJSON() ([]byte, error) {
	if it.raw != nil {
		return it.raw, nil
	}
	type plain respItem
	return json.Marshal(plain(it))
}

type respTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      bool            `json:"strict"`
}

type respRequest struct {
	Model             string     `json:"model"`
	Instructions      string     `json:"instructions,omitempty"`
	Input             []respItem `json:"input"`
	Tools             []respTool `json:"tools,omitempty"`
	ToolChoice        string     `json:"tool_choice,omitempty"`
	Stream            bool       `json:"stream"`
	Store             bool       `json:"store"`
	Background        bool       `json:"background"`
	Truncation        string     `json:"truncation"`
	ParallelToolCalls bool       `json:"parallel_tool_calls"`
	MaxOutputTokens   int64      `json:"max_output_tokens,omitempty"`
	Include           []string   `json:"include,omitempty"`
	Reasoning         *struct {
		Effort string `json:"effort"`
	} `json:"reasoning,omitempty"`
}

func (m *ResponsesModel) body(req *model.Request) ([]byte, error) {
	w := respRequest{Model: m.opts.Model, Instructions: req.Instructions, Stream: true, Truncation: "disabled", MaxOutputTokens: allowance(req, m.opts.MaxOutputTokens)}
	if w.MaxOutputTokens != 0 && w.MaxOutputTokens < minResponseOutput {
		return nil, &Error{Code: CodeUnsupported, Delivery: NotSent, Reason: fmt.Sprintf("open_responses needs max_output_tokens >= %d", minResponseOutput)}
	}
	if m.opts.ReasoningEffort != "" {
		w.Reasoning = &struct {
			Effort string `json:"effort"`
		}{m.opts.ReasoningEffort}
	}
	w.Input = []respItem{}
	for i := range req.Messages {
		msg := &req.Messages[i]
		switch msg.Role {
		case model.RoleUser:
			w.Input = append(w.Input, respItem{Type: "message", Role: "user", Content: []respContent{{Type: "input_text", Text: msg.Content}}})
		case model.RoleAssistant:
			for _, r := range msg.Reasoning {
				if r.Provider == string(m.opts.Provider) && m.opts.Provider == OpenAI && json.Valid(r.Data) {
					w.Input = append(w.Input, respItem{raw: r.Data})
				}
			}
			if msg.Content != "" {
				w.Input = append(w.Input, respItem{Type: "message", Role: "assistant", Content: []respContent{{Type: "output_text", Text: msg.Content}}})
			}
			for _, tc := range msg.ToolCalls {
				args := string(tc.Arguments)
				if args == "" {
					args = "{}"
				}
				w.Input = append(w.Input, respItem{Type: "function_call", CallID: tc.ID, Name: tc.Name, Arguments: args})
			}
		case model.RoleTool:
			out := msg.Content
			w.Input = append(w.Input, respItem{Type: "function_call_output", CallID: msg.ToolCallID, Output: &out})
		default:
			return nil, &Error{Code: CodeUnsupported, Delivery: NotSent, Reason: fmt.Sprintf("message role %q has no Open Responses form", msg.Role)}
		}
	}
	for _, t := range req.Tools {
		params := t.Parameters
		if len(params) == 0 {
			params = json.RawMessage(`{"type":"object"}`)
		}
		w.Tools = append(w.Tools, respTool{Type: "function", Name: t.Name, Description: t.Description, Parameters: params})
	}
	if len(w.Tools) > 0 {
		w.ToolChoice = "auto"
	}
	if m.opts.Provider == OpenAI {
		w.Include = []string{"reasoning.encrypted_content"}
	}
	b, err := json.Marshal(&w)
	if err != nil {
		return nil, &Error{Code: CodeInvalidArguments, Delivery: NotSent, Reason: "a tool schema or argument is not valid JSON"}
	}
	return b, nil
}

// Generate implements [Model].
func (m *ResponsesModel) Generate(ctx context.Context, req *model.Request, emit func(string) error) (*model.Response, error) {
	body, err := m.body(req)
	if err != nil {
		return nil, err
	}
	resp, err := m.c.post(ctx, m.opts.Endpoint, m.opts.Secret, authHeader(m.opts.AuthHeader, m.opts.AuthScheme, m.opts.Secret), body, m.opts.StreamIdleTimeout)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	p := newResponsesStream(emit)
	p.secret = m.opts.Secret
	p.keepReasoning = m.opts.Provider == OpenAI
	r := NewSSEReader(resp.Body, m.c.limits.MaxFrameBytes, m.c.limits.MaxFrames)
	for {
		f, err := r.Next()
		if err != nil {
			if errors.Is(err, io.EOF) && p.terminal {
				break
			}
			return nil, p.fail(ctx, frameError(err, m.c.limits))
		}
		if err := p.frame(f.Event, f.Data); err != nil {
			return nil, p.fail(ctx, err)
		}
		if p.sawDone {
			break
		}
	}
	return p.result()
}

// respEvent is the union of every accepted event's fields.
type respEvent struct {
	Type           string          `json:"type"`
	SequenceNumber *uint64         `json:"sequence_number"`
	OutputIndex    *int            `json:"output_index"`
	ContentIndex   *int            `json:"content_index"`
	ItemID         string          `json:"item_id"`
	Delta          *string         `json:"delta"`
	Text           *string         `json:"text"`
	Arguments      *string         `json:"arguments"`
	Logprobs       json.RawMessage `json:"logprobs"`
	Item           *respOutputItem `json:"item"`
	Part           *respPart       `json:"part"`
	Response       *respResponse   `json:"response"`
}

type respOutputItem struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	Role      string          `json:"role"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments *string         `json:"arguments"`
	Content   []respPart      `json:"content"`
	Summary   json.RawMessage `json:"summary"`
	// EncryptedContent is a reasoning item's opaque state (OpenAI, with
	// include reasoning.encrypted_content).
	EncryptedContent *string `json:"encrypted_content"`
}

type respPart struct {
	Type        string          `json:"type"`
	Text        string          `json:"text"`
	Annotations json.RawMessage `json:"annotations"`
	Logprobs    json.RawMessage `json:"logprobs"`
}

type respResponse struct {
	Status            string `json:"status"`
	Model             string `json:"model"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Usage *struct {
		InputTokens        *uint64 `json:"input_tokens"`
		OutputTokens       *uint64 `json:"output_tokens"`
		TotalTokens        *uint64 `json:"total_tokens"`
		InputTokensDetails *struct {
			CachedTokens *uint64 `json:"cached_tokens"`
		} `json:"input_tokens_details"`
		OutputTokensDetails *struct {
			ReasoningTokens *uint64 `json:"reasoning_tokens"`
		} `json:"output_tokens_details"`
	} `json:"usage"`
}

type respItemState struct {
	kind   string
	id     string
	callID string
	name   string
	args   strings.Builder
	parts  map[int]*strings.Builder
	done   bool
}

// responsesStream is the Open Responses event state machine.
type responsesStream struct {
	streamState
	emit     func(string) error
	secret   string // masked out of the provider's words
	seq      uint64
	seqSeen  bool
	created  bool
	terminal bool
	sawDone  bool
	items    map[int]*respItemState
	order    []int
	calls    int
	parts    int
	text     strings.Builder
	finish   model.FinishReason
	usage    *model.Usage
	model    string
	// keepReasoning keeps each finished reasoning item (openai).
	keepReasoning bool
	reasoning     []model.Reasoning
}

func newResponsesStream(emit func(string) error) *responsesStream {
	return &responsesStream{emit: emit, items: map[int]*respItemState{}}
}

// frame consumes one SSE frame.
func (p *responsesStream) frame(event string, data []byte) error {
	if string(data) == "[DONE]" {
		if !p.terminal {
			return malformed("[DONE] arrived before the terminal event")
		}
		p.sawDone = true
		return nil
	}
	if p.terminal {
		return malformed("an event followed the terminal event")
	}
	if err := checkShape(data); err != nil {
		return err
	}
	var ev respEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return malformed("an event is not valid JSON of the Open Responses shape")
	}
	if event != ev.Type {
		return malformed("the SSE event name does not equal the JSON type")
	}
	if ev.SequenceNumber == nil {
		return malformed("event %q has no sequence_number", textx.Cut(ev.Type, 64))
	}
	if p.seqSeen && *ev.SequenceNumber <= p.seq {
		return malformed("sequence numbers must strictly increase")
	}
	p.seq, p.seqSeen = *ev.SequenceNumber, true
	if !p.created && ev.Type != "response.created" && ev.Type != "error" {
		return malformed("the first event must be response.created")
	}
	switch ev.Type {
	case "response.created":
		if p.created {
			return malformed("response.created arrived twice")
		}
		p.created = true
		return nil
	case "response.in_progress":
		return nil
	case "response.output_item.added":
		return p.itemAdded(&ev)
	case "response.content_part.added":
		return p.partAdded(&ev)
	case "response.output_text.delta":
		return p.textDelta(&ev)
	case "response.output_text.done":
		return p.textDone(&ev)
	case "response.content_part.done":
		if ev.Part != nil && hasEntries(ev.Part.Annotations) {
			return unsupported("annotations are not represented")
		}
		_, err := p.part(&ev)
		return err
	case "response.function_call_arguments.delta":
		it, err := p.item(&ev, "function_call")
		if err != nil {
			return err
		}
		if ev.Delta == nil {
			return malformed("function_call_arguments.delta without delta")
		}
		it.args.WriteString(*ev.Delta)
		return p.retain(len(*ev.Delta))
	case "response.function_call_arguments.done":
		it, err := p.item(&ev, "function_call")
		if err != nil {
			return err
		}
		if ev.Arguments == nil {
			return malformed("function_call_arguments.done without arguments")
		}
		if it.args.Len() == 0 {
			it.args.WriteString(*ev.Arguments)
			return p.retain(len(*ev.Arguments))
		}
		if it.args.String() != *ev.Arguments {
			return malformed("function_call_arguments.done disagrees with its deltas")
		}
		return nil
	case "response.reasoning_summary_part.added", "response.reasoning_summary_text.delta",
		"response.reasoning_summary_text.done", "response.reasoning_summary_part.done":
		// Summaries are private continuation, never public text.
		_, err := p.item(&ev, "reasoning")
		return err
	case "response.output_item.done":
		return p.itemDone(&ev)
	case "response.completed":
		return p.completed(&ev, model.FinishStop)
	case "response.incomplete":
		if ev.Response == nil || ev.Response.IncompleteDetails == nil {
			return malformed("response.incomplete without incomplete_details")
		}
		if r := ev.Response.IncompleteDetails.Reason; r != "max_output_tokens" {
			if r == "content_filter" {
				return rejected("the provider's content filter stopped the answer (incomplete: content_filter)")
			}
			return rejected("the response is incomplete (%s)", textx.Cut(r, 64))
		}
		return p.completed(&ev, model.FinishLength)
	case "error":
		pe, _ := parseProviderError(data)
		return streamError("an error event", pe, p.secret, p.escaped)
	case "response.failed":
		var f struct {
			Response struct {
				Error json.RawMessage `json:"error"`
			} `json:"response"`
		}
		var pe providerError
		if json.Unmarshal(data, &f) == nil && len(f.Response.Error) > 0 {
			pe, _ = parseProviderError([]byte(`{"error":` + string(f.Response.Error) + `}`))
		}
		return streamError("response.failed", pe, p.secret, p.escaped)
	}
	return unsupported("event %q is not in the %s profile", textx.Cut(ev.Type, 64), CapabilityProfile)
}

func hasEntries(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s != "" && s != "null" && s != "[]"
}

func (p *responsesStream) itemAdded(ev *respEvent) error {
	if ev.OutputIndex == nil || ev.Item == nil {
		return malformed("output_item.added without output_index or item")
	}
	idx := *ev.OutputIndex
	if _, dup := p.items[idx]; dup || idx < 0 {
		return malformed("output_index %d is repeated or negative", idx)
	}
	if len(p.items) >= maxOutputItems {
		return malformed("more than %d output items", maxOutputItems)
	}
	it := ev.Item
	if len(it.ID) > maxIDBytes {
		return malformed("an item ID exceeds %d bytes", maxIDBytes)
	}
	st := &respItemState{kind: it.Type, id: it.ID, parts: map[int]*strings.Builder{}}
	switch it.Type {
	case "message":
		if it.Role != "" && it.Role != "assistant" {
			return malformed("an output message's role is %q", textx.Cut(it.Role, 32))
		}
		if len(it.Content) > 0 {
			return malformed("output_item.added carries content")
		}
	case "function_call":
		// An empty or missing call_id is taken (local servers omit it):
		// the run loop makes one up that is unique in the conversation.
		if it.Name == "" || len(it.CallID) > maxCallIDBytes || len(it.Name) > maxCallIDBytes {
			return malformed("a function call needs a name of 1..%d bytes and a call_id of at most %d", maxCallIDBytes, maxCallIDBytes)
		}
		p.calls++
		if p.calls > MaxToolCalls {
			return malformed("more than %d function calls", MaxToolCalls)
		}
		st.callID, st.name = it.CallID, it.Name
		p.escaped = true
	case "reasoning":
		if len(it.Content) > 0 {
			return unsupported("raw reasoning content is not represented")
		}
	default:
		return unsupported("output item type %q is not in the %s profile", textx.Cut(it.Type, 64), CapabilityProfile)
	}
	p.items[idx] = st
	p.order = append(p.order, idx)
	return p.retain(len(it.ID) + len(it.CallID) + len(it.Name) + 64)
}

func (p *responsesStream) item(ev *respEvent, kind string) (*respItemState, error) {
	if ev.OutputIndex == nil {
		return nil, malformed("%s without output_index", textx.Cut(ev.Type, 64))
	}
	it, ok := p.items[*ev.OutputIndex]
	if !ok || it.done {
		return nil, malformed("%s for an output item that is not open", textx.Cut(ev.Type, 64))
	}
	if it.kind != kind {
		return nil, malformed("%s for a %s item", textx.Cut(ev.Type, 64), it.kind)
	}
	if ev.ItemID != "" && ev.ItemID != it.id {
		return nil, malformed("%s names another item", textx.Cut(ev.Type, 64))
	}
	return it, nil
}

func (p *responsesStream) partAdded(ev *respEvent) error {
	it, err := p.item(ev, "message")
	if err != nil {
		return err
	}
	if ev.ContentIndex == nil || ev.Part == nil {
		return malformed("content_part.added without content_index or part")
	}
	switch ev.Part.Type {
	case "output_text":
	case "refusal":
		return unsupported("the model refused (a refusal is not represented)")
	default:
		return unsupported("content part type %q is not in the %s profile", textx.Cut(ev.Part.Type, 64), CapabilityProfile)
	}
	if _, dup := it.parts[*ev.ContentIndex]; dup {
		return malformed("content_index %d is repeated", *ev.ContentIndex)
	}
	p.parts++
	if p.parts > maxOutputItems {
		return malformed("more than %d content parts", maxOutputItems)
	}
	it.parts[*ev.ContentIndex] = &strings.Builder{}
	return nil
}

func (p *responsesStream) part(ev *respEvent) (*strings.Builder, error) {
	it, err := p.item(ev, "message")
	if err != nil {
		return nil, err
	}
	if ev.ContentIndex == nil {
		return nil, malformed("%s without content_index", textx.Cut(ev.Type, 64))
	}
	b, ok := it.parts[*ev.ContentIndex]
	if !ok {
		return nil, malformed("%s for a content part that was not added", textx.Cut(ev.Type, 64))
	}
	return b, nil
}

func (p *responsesStream) textDelta(ev *respEvent) error {
	b, err := p.part(ev)
	if err != nil {
		return err
	}
	if ev.Delta == nil {
		return malformed("output_text.delta without delta")
	}
	if hasEntries(ev.Logprobs) {
		return unsupported("logprobs are not represented")
	}
	d := *ev.Delta
	if !utf8.ValidString(d) {
		return malformed("a text delta is not valid UTF-8")
	}
	if err := p.retain(2 * len(d)); err != nil {
		return err
	}
	b.WriteString(d)
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

func (p *responsesStream) textDone(ev *respEvent) error {
	b, err := p.part(ev)
	if err != nil {
		return err
	}
	if ev.Text == nil || *ev.Text != b.String() {
		return malformed("output_text.done disagrees with its deltas")
	}
	return nil
}

func (p *responsesStream) itemDone(ev *respEvent) error {
	if ev.OutputIndex == nil || ev.Item == nil {
		return malformed("output_item.done without output_index or item")
	}
	it, ok := p.items[*ev.OutputIndex]
	if !ok || it.done {
		return malformed("output_item.done for an item that is not open")
	}
	if ev.Item.Type != it.kind || ev.Item.ID != it.id {
		return malformed("output_item.done describes another item")
	}
	if it.kind == "function_call" && ev.Item.Arguments != nil {
		if it.args.Len() == 0 {
			it.args.WriteString(*ev.Item.Arguments)
		} else if it.args.String() != *ev.Item.Arguments {
			return malformed("output_item.done arguments disagree with their deltas")
		}
	}
	if it.kind == "reasoning" && len(ev.Item.Content) > 0 {
		return unsupported("raw reasoning content is not represented")
	}
	if it.kind == "reasoning" && p.keepReasoning && ev.Item.EncryptedContent != nil {
		summary := ev.Item.Summary
		if !hasEntries(summary) {
			summary = json.RawMessage(`[]`)
		}
		raw, err := json.Marshal(struct {
			Type             string          `json:"type"`
			ID               string          `json:"id,omitempty"`
			Summary          json.RawMessage `json:"summary"`
			EncryptedContent string          `json:"encrypted_content"`
		}{"reasoning", it.id, summary, *ev.Item.EncryptedContent})
		if err != nil {
			return malformed("a reasoning item's summary is not valid JSON")
		}
		if err := p.retain(len(raw)); err != nil {
			return err
		}
		p.reasoning = append(p.reasoning, model.Reasoning{Provider: string(OpenAI), Data: raw})
	}
	it.done = true
	return nil
}

func (p *responsesStream) completed(ev *respEvent, finish model.FinishReason) error {
	if ev.Response == nil {
		return malformed("%s without response", ev.Type)
	}
	for _, idx := range p.order {
		if !p.items[idx].done {
			return malformed("the response ended with an open output item")
		}
	}
	p.model = textx.Cut(ev.Response.Model, 256)
	if u := ev.Response.Usage; u != nil {
		us := &model.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens}
		if u.InputTokensDetails != nil {
			us.CacheReadTokens = u.InputTokensDetails.CachedTokens
		}
		if u.OutputTokensDetails != nil {
			us.ReasoningTokens = u.OutputTokensDetails.ReasoningTokens
		}
		p.usage = us
	}
	p.finish, p.terminal = finish, true
	return nil
}

func (p *responsesStream) result() (*model.Response, error) {
	if !p.terminal {
		return nil, &Error{Code: CodeMalformed, Delivery: ResponseReceived, Escaped: p.escaped, Reason: "the stream ended before its terminal event"}
	}
	r := &model.Response{Text: p.text.String(), FinishReason: p.finish, Reasoning: p.reasoning, Model: p.model}
	for _, idx := range p.order {
		it := p.items[idx]
		if it.kind != "function_call" {
			continue
		}
		args, err := callArguments(it.args.String(), "function call "+textx.Cut(it.name, 64), "arguments", p.finish == model.FinishLength, "incomplete: max_output_tokens")
		if err != nil {
			return nil, err
		}
		r.ToolCalls = append(r.ToolCalls, model.ToolCall{ID: it.callID, Name: it.name, Arguments: args})
	}
	if len(r.ToolCalls) > 0 && r.FinishReason == model.FinishStop {
		r.FinishReason = model.FinishToolCalls
	}
	if p.usage != nil {
		r.Usage, r.UsageReported = *p.usage, true
	}
	return r, nil
}
