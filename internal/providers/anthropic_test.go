package providers

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/pabloagent/pablo/model"
)

func anthropicModel(t *testing.T, endpoint string, opts AnthropicOptions) *AnthropicModel {
	t.Helper()
	opts.Endpoint, opts.Model, opts.Secret = endpoint, "claude-test", testSecret
	m, err := NewAnthropic(NewClient(ClientOptions{}), opts)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// The thinking blocks of a turn come back with the response as opaque
// reasoning, and the next request of the task sends them back first in
// the assistant turn, unchanged, with the tool result in one user turn.
func TestAnthropicThinkingBlocksGoBackWithinTheTask(t *testing.T) {
	a := &anthBuilder{}
	a.start(true)
	a.ev("content_block_start", `"index":0,"content_block":{"type":"thinking","thinking":"","signature":""}`)
	a.ev("content_block_delta", `"index":0,"delta":{"type":"thinking_delta","thinking":"Read the file."}`)
	a.ev("content_block_delta", `"index":0,"delta":{"type":"signature_delta","signature":"sig-1"}`)
	a.ev("content_block_stop", `"index":0`)
	a.ev("content_block_start", `"index":1,"content_block":{"type":"redacted_thinking","data":"enc"}`)
	a.ev("content_block_stop", `"index":1`)
	a.tool(2, call{"toolu_1", "fs_read", `{"path":"a.md"}`})
	p := newPeer(t, stream(200, a.done("tool_use", true)))
	m := anthropicModel(t, p.srv.URL, AnthropicOptions{ThinkingBudget: 2048})
	req := *testRequest
	req.MaxOutputTokens = 4096
	resp, err := m.Generate(context.Background(), &req, func(string) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Reasoning) != 2 || resp.Text != "" || resp.FinishReason != model.FinishToolCalls {
		t.Fatalf("got %+v", resp)
	}
	first := p.lastBody(t)
	if th, _ := first["thinking"].(map[string]any); th["type"] != "enabled" || th["budget_tokens"] != float64(2048) || first["max_tokens"] != float64(4096) {
		t.Fatalf("thinking %v max_tokens %v", first["thinking"], first["max_tokens"])
	}
	second := &model.Request{Instructions: testRequest.Instructions, Tools: testRequest.Tools, MaxOutputTokens: 4096, Messages: []model.Message{
		testRequest.Messages[0],
		{Role: model.RoleAssistant, ToolCalls: resp.ToolCalls, Reasoning: append(resp.Reasoning, model.Reasoning{Provider: "openai", Data: json.RawMessage(`{"type":"reasoning"}`)})},
		{Role: model.RoleTool, ToolCallID: "toolu_1", Content: "paid"},
		{Role: model.RoleUser, Content: "And then?"},
	}}
	if _, err := m.Generate(context.Background(), second, func(string) error { return nil }); err != nil {
		t.Fatal(err)
	}
	var body struct {
		System   []map[string]any `json:"system"`
		Messages []struct {
			Role    string           `json:"role"`
			Content []map[string]any `json:"content"`
		} `json:"messages"`
	}
	p.mu.Lock()
	json.Unmarshal(p.bodies[1], &body)
	p.mu.Unlock()
	if len(body.Messages) != 3 {
		t.Fatalf("want user, assistant, user; got %+v", body.Messages)
	}
	as := body.Messages[1].Content
	if len(as) != 3 || as[0]["type"] != "thinking" || as[0]["thinking"] != "Read the file." || as[0]["signature"] != "sig-1" ||
		as[1]["type"] != "redacted_thinking" || as[1]["data"] != "enc" || as[2]["type"] != "tool_use" || as[2]["id"] != "toolu_1" {
		t.Fatalf("assistant turn: %v", as)
	}
	us := body.Messages[2].Content
	if len(us) != 2 || us[0]["type"] != "tool_result" || us[0]["tool_use_id"] != "toolu_1" || us[1]["type"] != "text" {
		t.Fatalf("tool result and the next words must share one user turn: %v", us)
	}
	if body.System[0]["text"] != "Be brief." {
		t.Fatalf("system: %v", body.System)
	}
}

// A thinking budget at or above max_tokens is refused before anything is
// sent, with what to change.
func TestAnthropicThinkingBudgetBelowMaxTokens(t *testing.T) {
	p := newPeer(t, stream(200, anthWire{}.text([]string{"a"}, true)))
	m := anthropicModel(t, p.srv.URL, AnthropicOptions{ThinkingBudget: 4096})
	_, err := m.Generate(context.Background(), testRequest, func(string) error { return nil })
	e := wantError(t, err, CodeUnsupported, NotSent, "")
	if !strings.Contains(e.Reason, "raise max_output_tokens") || p.hits.Load() != 0 {
		t.Fatalf("%v (hits %d)", err, p.hits.Load())
	}
	if _, err := NewAnthropic(NewClient(ClientOptions{}), AnthropicOptions{Endpoint: "x", Model: "m", ThinkingBudget: 100}); err == nil {
		t.Fatal("a budget under 1024 must be refused")
	}
}

// stop_reason maps to the finish reasons; refusal is a rejection and an
// unknown reason malformed.
func TestAnthropicStopReasonMapping(t *testing.T) {
	cases := map[string]model.FinishReason{"end_turn": model.FinishStop, "stop_sequence": model.FinishStop, "max_tokens": model.FinishLength}
	for stop, want := range cases {
		a := &anthBuilder{}
		a.start(true)
		a.text(0, []string{"x"})
		p := newPeer(t, stream(200, a.done(stop, true)))
		resp, err := anthropicModel(t, p.srv.URL, AnthropicOptions{}).Generate(context.Background(), testRequest, func(string) error { return nil })
		if err != nil || resp.FinishReason != want {
			t.Fatalf("%s: %v %v", stop, resp, err)
		}
	}
	for stop, code := range map[string]Code{"refusal": CodeRejected, "pause_turn": CodeUnsupported, "bogus": CodeMalformed} {
		a := &anthBuilder{}
		a.start(true)
		p := newPeer(t, stream(200, a.done(stop, true)))
		_, err := anthropicModel(t, p.srv.URL, AnthropicOptions{}).Generate(context.Background(), testRequest, func(string) error { return nil })
		wantError(t, err, code, ResponseReceived, "")
	}
}

// overloaded_error and rate_limit_error, in the stream before any output
// or as a status, are retryable; after output they are not.
func TestAnthropicOverloadedAndRateLimitAreRetryable(t *testing.T) {
	for typ, class := range map[string]RetryClass{"overloaded_error": RetryServiceUnavailable, "rate_limit_error": RetryRateLimited} {
		a := &anthBuilder{}
		a.start(true)
		a.ev("error", `"error":{"type":"`+typ+`","message":"Overloaded"}`)
		p := newPeer(t, stream(200, a.b.String()))
		_, err := anthropicModel(t, p.srv.URL, AnthropicOptions{}).Generate(context.Background(), testRequest, func(string) error { return nil })
		wantError(t, err, CodeRejected, ResponseReceived, class)
	}
	p := newPeer(t, status(529))
	_, err := anthropicModel(t, p.srv.URL, AnthropicOptions{}).Generate(context.Background(), testRequest, func(string) error { return nil })
	wantError(t, err, CodeRejected, ResponseReceived, RetryServiceUnavailable)
	a := &anthBuilder{}
	a.start(true)
	a.ev("content_block_start", `"index":0,"content_block":{"type":"text","text":""}`)
	a.ev("content_block_delta", `"index":0,"delta":{"type":"text_delta","text":"half"}`)
	a.ev("error", `"error":{"type":"overloaded_error","message":"Overloaded"}`)
	p = newPeer(t, stream(200, a.b.String()))
	_, err = anthropicModel(t, p.srv.URL, AnthropicOptions{}).Generate(context.Background(), testRequest, func(string) error { return nil })
	if e := wantError(t, err, CodeRejected, ResponseReceived, ""); !e.Escaped {
		t.Fatal("an error after text must say the text escaped")
	}
}

// Cache read and write tokens reach the usage.
func TestAnthropicCacheTokensReachUsage(t *testing.T) {
	a := &anthBuilder{}
	a.ev("message_start", `"message":{"id":"m","model":"claude-test","usage":{"input_tokens":5,"cache_read_input_tokens":900,"cache_creation_input_tokens":120,"output_tokens":1}}`)
	a.text(0, []string{"ok"})
	p := newPeer(t, stream(200, a.done("end_turn", true)))
	resp, err := anthropicModel(t, p.srv.URL, AnthropicOptions{}).Generate(context.Background(), testRequest, func(string) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	u := resp.Usage
	if *u.InputTokens != 5 || *u.CacheReadTokens != 900 || *u.CacheWriteTokens != 120 || *u.OutputTokens != 7 {
		t.Fatalf("usage %+v", u)
	}
}
