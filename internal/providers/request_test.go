package providers

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/pabloagent/pablo/model"
)

var history = &model.Request{
	Instructions: "Be brief.",
	Messages: []model.Message{
		{Role: model.RoleUser, Content: "What was paid?"},
		{Role: model.RoleAssistant, Content: "Reading.", ToolCalls: []model.ToolCall{{ID: "call_1", Name: "fs_read", Arguments: json.RawMessage(`{"path":"a.md"}`)}}},
		{Role: model.RoleTool, ToolCallID: "call_1", Content: `{"status":"completed"}`},
	},
	Tools:           testRequest.Tools,
	MaxOutputTokens: 4096,
}

func TestChatRequestShapePerProvider(t *testing.T) {
	for _, c := range []struct {
		p            Provider
		streamOption bool
		effort       string
	}{{OpenAICompatible, true, "reasoning_effort"}, {Vercel, true, "reasoning"}, {OpenRouter, false, "reasoning"}} {
		t.Run(string(c.p), func(t *testing.T) {
			p := newPeer(t, stream(200, chatWire{}.text([]string{"a"}, false)))
			m, err := NewChat(NewClient(ClientOptions{}), ChatOptions{Provider: c.p, Endpoint: p.srv.URL, Model: "m", Secret: testSecret, ReasoningEffort: "low", MaxOutputTokens: 100})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := m.Generate(context.Background(), history, func(string) error { return nil }); err != nil {
				t.Fatal(err)
			}
			b := p.lastBody(t)
			if _, ok := b["stream_options"]; ok != c.streamOption {
				t.Fatalf("stream_options present=%v", ok)
			}
			if _, ok := b[c.effort]; !ok {
				t.Fatalf("reasoning field %s missing: %v", c.effort, b)
			}
			if b["max_tokens"] != float64(100) || b["tool_choice"] != "auto" {
				t.Fatalf("max_tokens/tool_choice: %v", b)
			}
			msgs := b["messages"].([]any)
			if len(msgs) != 4 || msgs[0].(map[string]any)["role"] != "system" || msgs[3].(map[string]any)["tool_call_id"] != "call_1" {
				t.Fatalf("messages: %v", msgs)
			}
			tc := msgs[2].(map[string]any)["tool_calls"].([]any)[0].(map[string]any)
			if tc["function"].(map[string]any)["arguments"] != `{"path":"a.md"}` {
				t.Fatalf("tool call: %v", tc)
			}
		})
	}
}

func TestResponsesRequestShape(t *testing.T) {
	p := newPeer(t, stream(200, respWire{}.text([]string{"a"}, false)))
	m, err := NewResponses(NewClient(ClientOptions{}), ResponsesOptions{Endpoint: p.srv.URL + "/v1/responses", Model: "m", Secret: testSecret,
		AuthHeader: "X-Provider-Api-Key", AuthScheme: "raw", ReasoningEffort: "high"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Generate(context.Background(), history, func(string) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if p.header.Get("X-Provider-Api-Key") != testSecret || p.header.Get("Authorization") != "" {
		t.Fatalf("auth headers: %v", p.header)
	}
	b := p.lastBody(t)
	for k, want := range map[string]any{"stream": true, "store": false, "background": false, "truncation": "disabled", "parallel_tool_calls": false, "instructions": "Be brief.", "tool_choice": "auto"} {
		if b[k] != want {
			t.Fatalf("%s = %v, want %v", k, b[k], want)
		}
	}
	if _, ok := b["previous_response_id"]; ok {
		t.Fatal("the full history is sent, never previous_response_id")
	}
	input := b["input"].([]any)
	types := ""
	for _, it := range input {
		types += it.(map[string]any)["type"].(string) + " "
	}
	if types != "message message function_call function_call_output " {
		t.Fatalf("input item types: %q", types)
	}
	tool := b["tools"].([]any)[0].(map[string]any)
	if tool["type"] != "function" || tool["strict"] != false || tool["name"] != "fs_read" {
		t.Fatalf("tool: %v", tool)
	}
}

func TestResponsesRefusesSmallOutputAndUnsupportedEffort(t *testing.T) {
	p := newPeer(t, stream(200, respWire{}.text([]string{"a"}, false)))
	m, _ := NewResponses(NewClient(ClientOptions{}), ResponsesOptions{Endpoint: p.srv.URL, Model: "m"})
	for _, n := range []int64{15, 16} {
		_, err := m.Generate(context.Background(), &model.Request{Messages: history.Messages, MaxOutputTokens: n}, func(string) error { return nil })
		if (err == nil) != (n >= 16) {
			t.Fatalf("max_output_tokens %d: %v", n, err)
		}
	}
	if p.hits.Load() != 1 {
		t.Fatalf("a refused request reached the peer: %d", p.hits.Load())
	}
	for _, e := range []string{"minimal", "max"} {
		if _, err := NewResponses(NewClient(ClientOptions{}), ResponsesOptions{Endpoint: p.srv.URL, Model: "m", ReasoningEffort: e}); err == nil {
			t.Fatalf("effort %q must be refused", e)
		}
	}
}

func TestResponsesIncompleteMapsToLength(t *testing.T) {
	r := &respBuilder{}
	r.start()
	r.message(0, []string{"cut"})
	r.ev("response.incomplete", `"response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"}}`)
	p := newPeer(t, stream(200, r.b.String()))
	m, _ := NewResponses(NewClient(ClientOptions{}), ResponsesOptions{Endpoint: p.srv.URL, Model: "m"})
	resp, err := m.Generate(context.Background(), testRequest, func(string) error { return nil })
	if err != nil || resp.FinishReason != model.FinishLength || resp.UsageReported {
		t.Fatalf("%+v %v", resp, err)
	}
	r2 := &respBuilder{}
	r2.start()
	r2.ev("response.incomplete", `"response":{"status":"incomplete","incomplete_details":{"reason":"content_filter"}}`)
	p2 := newPeer(t, stream(200, r2.b.String()))
	m2, _ := NewResponses(NewClient(ClientOptions{}), ResponsesOptions{Endpoint: p2.srv.URL, Model: "m"})
	_, err = m2.Generate(context.Background(), testRequest, func(string) error { return nil })
	wantError(t, err, CodeRejected, ResponseReceived, "")
}
