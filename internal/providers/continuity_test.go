package providers

import (
	"context"
	"strings"
	"testing"

	"github.com/pabloagent/pablo/internal/providertest"
	"github.com/pabloagent/pablo/model"
)

// The second request of a task carries the first turn's reasoning state
// as each API requires: an OpenAI encrypted reasoning item before the
// turn's output items, an Anthropic signed thinking block first in the
// assistant turn. open_responses asks for no encrypted content and
// replays none.
func TestReasoningContinuityReachesTheSecondRequest(t *testing.T) {
	cases := []struct {
		name  Provider
		wire  providertest.Wire
		build func(c *Client, endpoint string) (Model, error)
		want  []string
	}{
		{OpenAI, providertest.Responses, func(c *Client, e string) (Model, error) {
			return NewResponses(c, ResponsesOptions{Provider: OpenAI, Endpoint: e, Model: "gpt-test", Secret: testSecret})
		}, []string{`"include":["reasoning.encrypted_content"]`, `{"type":"reasoning","id":"rs_0","summary":[{"type":"summary_text","text":"Let me think."}],"encrypted_content":"enc-turn-1"},{"type":"message","role":"assistant"`}},
		{Anthropic, providertest.Anthropic, func(c *Client, e string) (Model, error) {
			return NewAnthropic(c, AnthropicOptions{Endpoint: e, Model: "claude-test", Secret: testSecret})
		}, []string{`"role":"assistant","content":[{"type":"thinking","thinking":"Let me think.","signature":"sig-turn-1"},{"type":"text"`}},
		{Gemini, providertest.Gemini, func(c *Client, e string) (Model, error) {
			return NewGemini(c, GeminiOptions{Endpoint: e, Model: "gemini-test", Secret: testSecret})
		}, []string{`{"role":"model","parts":[{"text":"Let me think.","thought":true},{"text":"Reading."},{"thoughtSignature":"` + providertest.GeminiSignature(1) + `","functionCall":{"id":"call_1","name":"fs_read","args":{"path":"a.md"}}}]}`,
			`{"functionResponse":{"id":"call_1","name":"fs_read","response":{"content":"paid"}}}`}},
		{OpenResponses, providertest.Responses, func(c *Client, e string) (Model, error) {
			return NewResponses(c, ResponsesOptions{Endpoint: e, Model: "m", Secret: testSecret})
		}, nil},
	}
	for _, c := range cases {
		t.Run(string(c.name), func(t *testing.T) {
			srv := providertest.New(providertest.Options{Wire: c.wire, Reasoning: true, Turns: []providertest.Turn{
				{Text: "Reading.", Calls: []providertest.Call{{ID: "call_1", Name: "fs_read", Args: `{"path":"a.md"}`}}}, {Text: "Paid."}}})
			defer srv.Close()
			m, err := c.build(NewClient(ClientOptions{}), srv.Endpoint())
			if err != nil {
				t.Fatal(err)
			}
			first, err := m.Generate(context.Background(), testRequest, func(string) error { return nil })
			if err != nil {
				t.Fatal(err)
			}
			req := *testRequest
			req.Messages = append(append([]model.Message(nil), testRequest.Messages...),
				model.Message{Role: model.RoleAssistant, Content: first.Text, ToolCalls: first.ToolCalls, Reasoning: first.Reasoning},
				model.Message{Role: model.RoleTool, ToolCallID: "call_1", Content: "paid"})
			if _, err := m.Generate(context.Background(), &req, func(string) error { return nil }); err != nil {
				t.Fatal(err)
			}
			second := string(srv.Bodies()[1])
			for _, w := range c.want {
				if !strings.Contains(second, w) {
					t.Fatalf("the second request lacks %s:\n%s", w, second)
				}
			}
			if c.want == nil && (len(first.Reasoning) != 0 || strings.Contains(second, "enc-turn")) {
				t.Fatalf("open_responses kept reasoning state: %s", second)
			}
		})
	}
}
