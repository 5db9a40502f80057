package providers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pabloagent/pablo/internal/textx"
	"github.com/pabloagent/pablo/model"
)

// Gemini is the Gemini API's streamGenerateContent, natively.
const Gemini Provider = "gemini"

// GeminiOptions configure a Gemini model.
type GeminiOptions struct {
	// Endpoint is the model's …/models/{model}:streamGenerateContent URL;
	// the adapter adds alt=sse to its query.
	Endpoint string
	// Model is the model ID (for spans; the endpoint names the model).
	Model string
	// Secret is the API key, sent as x-goog-api-key.
	Secret string
	// ThinkingBudget, when non-zero, is generationConfig.thinkingConfig's
	// thinkingBudget.
	ThinkingBudget uint64
	// MaxOutputTokens caps every request's output allowance.
	MaxOutputTokens int64
	// StreamIdleTimeout bounds the wait for the provider's next byte
	// (DefaultStreamIdleTimeout when zero).
	StreamIdleTimeout time.Duration
}

// GeminiModel speaks the Gemini API's streamGenerateContent as SSE.
type GeminiModel struct {
	c    *Client
	opts GeminiOptions
}

// NewGemini returns a Gemini model on client c.
func NewGemini(c *Client, opts GeminiOptions) (*GeminiModel, error) {
	if opts.Model == "" || opts.Endpoint == "" {
		return nil, errors.New("providers: a Gemini model needs Endpoint and Model")
	}
	return &GeminiModel{c: c, opts: opts}, nil
}

type gemPart struct {
	Text             string          `json:"text,omitempty"`
	Thought          bool            `json:"thought,omitempty"`
	ThoughtSignature string          `json:"thoughtSignature,omitempty"`
	FunctionCall     *gemCall        `json:"functionCall,omitempty"`
	FunctionResponse *gemCallResult  `json:"functionResponse,omitempty"`
	InlineData       json.RawMessage `json:"inlineData,omitempty"`
	ExecutableCode   json.RawMessage `json:"executableCode,omitempty"`
}

type gemCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

type gemCallResult struct {
	ID       string `json:"id,omitempty"`
	Name     string `json:"name"`
	Response struct {
		Content string `json:"content"`
	} `json:"response"`
}

type gemContent struct {
	Role  string            `json:"role,omitempty"`
	Parts []json.RawMessage `json:"parts"`
}

type gemRequest struct {
	Contents          []gemContent `json:"contents"`
	SystemInstruction *gemContent  `json:"systemInstruction,omitempty"`
	Tools             []struct {
		FunctionDeclarations []gemFunction `json:"functionDeclarations"`
	} `json:"tools,omitempty"`
	GenerationConfig struct {
		MaxOutputTokens int64 `json:"maxOutputTokens,omitempty"`
		ThinkingConfig  *struct {
			ThinkingBudget uint64 `json:"thinkingBudget"`
		} `json:"thinkingConfig,omitempty"`
	} `json:"generationConfig"`
}

type gemFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

func part(p gemPart) json.RawMessage {
	b, _ := json.Marshal(p)
	return b
}

func (m *GeminiModel) body(req *model.Request) ([]byte, error) {
	var w gemRequest
	w.Contents = []gemContent{}
	w.GenerationConfig.MaxOutputTokens = allowance(req, m.opts.MaxOutputTokens)
	if m.opts.ThinkingBudget > 0 {
		w.GenerationConfig.ThinkingConfig = &struct {
			ThinkingBudget uint64 `json:"thinkingBudget"`
		}{m.opts.ThinkingBudget}
	}
	if req.Instructions != "" {
		w.SystemInstruction = &gemContent{Parts: []json.RawMessage{part(gemPart{Text: req.Instructions})}}
	}
	add := func(role string, parts ...json.RawMessage) {
		if n := len(w.Contents); n > 0 && w.Contents[n-1].Role == role {
			w.Contents[n-1].Parts = append(w.Contents[n-1].Parts, parts...)
			return
		}
		w.Contents = append(w.Contents, gemContent{Role: role, Parts: parts})
	}
	names := map[string]string{}
	for i := range req.Messages {
		msg := &req.Messages[i]
		switch msg.Role {
		case model.RoleUser:
			add("user", part(gemPart{Text: msg.Content}))
		case model.RoleAssistant:
			for _, tc := range msg.ToolCalls {
				names[tc.ID] = tc.Name
			}
			if parts, ok := m.replay(msg); ok {
				add("model", parts...)
				continue
			}
			var parts []json.RawMessage
			if msg.Content != "" {
				parts = append(parts, part(gemPart{Text: msg.Content}))
			}
			for _, tc := range msg.ToolCalls {
				args := tc.Arguments
				if len(args) == 0 {
					args = json.RawMessage(`{}`)
				}
				parts = append(parts, part(gemPart{FunctionCall: &gemCall{ID: tc.ID, Name: tc.Name, Args: args}}))
			}
			if len(parts) > 0 {
				add("model", parts...)
			}
		case model.RoleTool:
			r := &gemCallResult{ID: msg.ToolCallID, Name: names[msg.ToolCallID]}
			if r.Name == "" {
				return nil, &Error{Code: CodeUnsupported, Delivery: NotSent, Reason: "a tool result answers no earlier function call; Gemini needs the call's name"}
			}
			r.Response.Content = msg.Content
			add("user", part(gemPart{FunctionResponse: r}))
		default:
			return nil, &Error{Code: CodeUnsupported, Delivery: NotSent, Reason: fmt.Sprintf("message role %q has no Gemini form", msg.Role)}
		}
	}
	if len(req.Tools) > 0 {
		w.Tools = make([]struct {
			FunctionDeclarations []gemFunction `json:"functionDeclarations"`
		}, 1)
		for _, t := range req.Tools {
			w.Tools[0].FunctionDeclarations = append(w.Tools[0].FunctionDeclarations, gemFunction{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
		}
	}
	b, err := json.Marshal(&w)
	if err != nil {
		return nil, &Error{Code: CodeInvalidArguments, Delivery: NotSent, Reason: "a tool schema or argument is not valid JSON"}
	}
	return b, nil
}

// replay returns the model turn's parts exactly as they arrived, thought
// signatures included, when the turn kept them; the function calls take
// the IDs the run loop gave them, so the results still pair.
func (m *GeminiModel) replay(msg *model.Message) ([]json.RawMessage, bool) {
	for _, r := range msg.Reasoning {
		if r.Provider != string(Gemini) {
			continue
		}
		var parts []gemPart
		if json.Unmarshal(r.Data, &parts) != nil {
			return nil, false
		}
		call := 0
		out := make([]json.RawMessage, 0, len(parts))
		for _, p := range parts {
			if p.FunctionCall != nil {
				if call >= len(msg.ToolCalls) {
					return nil, false
				}
				tc := msg.ToolCalls[call]
				p.FunctionCall.ID, p.FunctionCall.Name, p.FunctionCall.Args = tc.ID, tc.Name, tc.Arguments
				call++
			}
			out = append(out, part(p))
		}
		return out, call == len(msg.ToolCalls)
	}
	return nil, false
}

// Generate implements [Model].
func (m *GeminiModel) Generate(ctx context.Context, req *model.Request, emit func(string) error) (*model.Response, error) {
	body, err := m.body(req)
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	if m.opts.Secret != "" {
		h.Set("x-goog-api-key", m.opts.Secret)
	}
	sep := "?"
	if strings.Contains(m.opts.Endpoint, "?") {
		sep = "&"
	}
	resp, err := m.c.post(ctx, m.opts.Endpoint+sep+"alt=sse", m.opts.Secret, h, body, m.opts.StreamIdleTimeout)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	p := &gemStream{emit: emit, secret: m.opts.Secret}
	r := NewSSEReader(resp.Body, m.c.limits.MaxFrameBytes, m.c.limits.MaxFrames)
	for {
		f, err := r.Next()
		if err != nil {
			if errors.Is(err, io.EOF) && p.finish != "" {
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

type gemChunk struct {
	Candidates []struct {
		Content *struct {
			Role  string    `json:"role"`
			Parts []gemPart `json:"parts"`
		} `json:"content"`
		FinishReason string `json:"finishReason"`
	} `json:"candidates"`
	PromptFeedback *struct {
		BlockReason string `json:"blockReason"`
	} `json:"promptFeedback"`
	UsageMetadata *struct {
		PromptTokenCount        *uint64 `json:"promptTokenCount"`
		CandidatesTokenCount    *uint64 `json:"candidatesTokenCount"`
		CachedContentTokenCount *uint64 `json:"cachedContentTokenCount"`
		ThoughtsTokenCount      *uint64 `json:"thoughtsTokenCount"`
	} `json:"usageMetadata"`
	ModelVersion string          `json:"modelVersion"`
	Error        json.RawMessage `json:"error"`
}

// gemStream folds the stream's chunks: each carries new parts of the one
// candidate; the last carries finishReason and the usage.
type gemStream struct {
	streamState
	emit   func(string) error
	secret string
	text   strings.Builder
	parts  []gemPart
	signed bool
	finish string
	usage  *model.Usage
	model  string
}

func (p *gemStream) frame(data []byte) error {
	if err := checkShape(data); err != nil {
		return err
	}
	var c gemChunk
	if err := json.Unmarshal(data, &c); err != nil {
		return malformed("a chunk is not valid JSON of the GenerateContentResponse shape")
	}
	if len(c.Error) > 0 && string(c.Error) != "null" {
		pe, _ := parseProviderError(data)
		return streamError("an error chunk", pe, p.secret, p.escaped)
	}
	if p.finish != "" {
		if len(c.Candidates) > 0 && c.Candidates[0].Content != nil && len(c.Candidates[0].Content.Parts) > 0 {
			return malformed("content arrived after the finish reason")
		}
	}
	if c.ModelVersion != "" {
		p.model = textx.Cut(c.ModelVersion, 256)
	}
	if f := c.PromptFeedback; f != nil && f.BlockReason != "" {
		return rejected("the provider's safety filter blocked the prompt (promptFeedback.blockReason %s); this is a content filter, not a transient failure", textx.Cut(f.BlockReason, 64))
	}
	if len(c.Candidates) > 1 {
		return unsupported("more than one candidate is not represented")
	}
	if u := c.UsageMetadata; u != nil {
		us := &model.Usage{InputTokens: u.PromptTokenCount, CacheReadTokens: u.CachedContentTokenCount, ReasoningTokens: u.ThoughtsTokenCount}
		if u.CandidatesTokenCount != nil || u.ThoughtsTokenCount != nil {
			// Thoughts are billed as output and are not in
			// candidatesTokenCount.
			var out uint64
			if u.CandidatesTokenCount != nil {
				out += *u.CandidatesTokenCount
			}
			if u.ThoughtsTokenCount != nil {
				out += *u.ThoughtsTokenCount
			}
			us.OutputTokens = &out
		}
		p.usage = us
	}
	if len(c.Candidates) == 0 {
		return nil
	}
	cand := c.Candidates[0]
	if cand.Content != nil {
		for _, part := range cand.Content.Parts {
			if err := p.part(part); err != nil {
				return err
			}
		}
	}
	if cand.FinishReason != "" {
		p.finish = textx.Cut(cand.FinishReason, 64)
	}
	return nil
}

func (p *gemStream) part(part gemPart) error {
	if len(part.InlineData) > 0 || len(part.ExecutableCode) > 0 {
		return unsupported("inline data and executable code are not represented")
	}
	if len(p.parts) >= maxOutputItems {
		return malformed("more than %d parts", maxOutputItems)
	}
	if err := p.retain(len(part.Text) + len(part.ThoughtSignature) + 64); err != nil {
		return err
	}
	if part.ThoughtSignature != "" {
		p.signed = true
	}
	switch {
	case part.FunctionCall != nil:
		c := part.FunctionCall
		if c.Name == "" || len(c.Name) > maxCallIDBytes || len(c.ID) > maxCallIDBytes {
			return malformed("a function call needs a name of 1..%d bytes and an id of at most %d", maxCallIDBytes, maxCallIDBytes)
		}
		args := strings.TrimSpace(string(c.Args))
		if args == "" || args == "null" {
			c.Args = json.RawMessage(`{}`)
		} else if args[0] != '{' {
			return malformed("function call %s's args are not a JSON object", textx.Cut(c.Name, 64))
		}
		p.escaped = true
	case part.Thought:
		// A thought summary is private: kept for the turn's parts, never
		// shown as text.
	case part.Text != "":
		if !utf8.ValidString(part.Text) {
			return malformed("a text part is not valid UTF-8")
		}
		p.text.WriteString(part.Text)
		p.escaped = true
		if err := p.emit(part.Text); err != nil {
			return &Error{Code: CodeEventSink, Delivery: ResponseReceived, Escaped: true, Reason: "the event sink failed", Err: err}
		}
	}
	p.parts = append(p.parts, part)
	return nil
}

func (p *gemStream) result() (*model.Response, error) {
	r := &model.Response{Text: p.text.String(), Model: p.model}
	var calls []*gemCall
	for i := range p.parts {
		if c := p.parts[i].FunctionCall; c != nil {
			calls = append(calls, c)
		}
	}
	switch p.finish {
	case "STOP":
		r.FinishReason = model.FinishStop
	case "MAX_TOKENS":
		r.FinishReason = model.FinishLength
		if len(calls) > 0 {
			return nil, &Error{Code: CodeMalformed, Delivery: ResponseReceived, Escaped: true,
				Reason: fmt.Sprintf("the output limit (finishReason MAX_TOKENS) cut the turn off at function call %s; raise the model's max_output_tokens", textx.Cut(calls[len(calls)-1].Name, 64))}
		}
	case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY":
		return nil, &Error{Code: CodeRejected, Delivery: ResponseReceived, Escaped: p.escaped,
			Reason: fmt.Sprintf("the provider's content filter stopped the answer (finishReason %s)", p.finish)}
	case "MALFORMED_FUNCTION_CALL":
		return nil, &Error{Code: CodeMalformed, Delivery: ResponseReceived, Escaped: p.escaped, Reason: "the model produced a function call the provider could not parse (finishReason MALFORMED_FUNCTION_CALL)"}
	default:
		return nil, &Error{Code: CodeMalformed, Delivery: ResponseReceived, Escaped: p.escaped, Reason: fmt.Sprintf("unknown finishReason %q", p.finish)}
	}
	if len(calls) > MaxToolCalls {
		return nil, &Error{Code: CodeMalformed, Delivery: ResponseReceived, Escaped: true, Reason: fmt.Sprintf("more than %d function calls", MaxToolCalls)}
	}
	for i, c := range calls {
		id := c.ID
		if id == "" {
			// Gemini's calls need no ID; the run loop replaces one that
			// repeats an earlier turn's.
			id = "call_" + strconv.Itoa(i)
		}
		r.ToolCalls = append(r.ToolCalls, model.ToolCall{ID: id, Name: c.Name, Arguments: c.Args})
	}
	if len(r.ToolCalls) > 0 {
		r.FinishReason = model.FinishToolCalls
	}
	if p.signed {
		// The turn's parts carry thought signatures the API requires
		// back on the next request, on the same parts.
		raw, _ := json.Marshal(p.parts)
		r.Reasoning = []model.Reasoning{{Provider: string(Gemini), Data: raw}}
	}
	if p.usage != nil {
		r.Usage, r.UsageReported = *p.usage, true
	}
	return r, nil
}
