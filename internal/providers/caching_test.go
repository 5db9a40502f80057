package providers

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/pabloagent/pablo/internal/providertest"
	"github.com/pabloagent/pablo/model"
)

// twentyTurns runs a 20-turn task against the Anthropic fixture (each
// turn a tool call and its result) and returns the request bodies.
func twentyTurns(tb testing.TB, caching bool) [][]byte {
	tb.Helper()
	srv := providertest.New(providertest.Options{Wire: providertest.Anthropic, Turns: []providertest.Turn{
		{Text: "Reading.", Calls: []providertest.Call{{Name: "fs_read", Args: `{"path":"a.md"}`}}}}})
	defer srv.Close()
	m, err := NewAnthropic(NewClient(ClientOptions{}), AnthropicOptions{Endpoint: srv.Endpoint(), Model: "claude-test", Secret: testSecret, PromptCaching: caching})
	if err != nil {
		tb.Fatal(err)
	}
	req := *testRequest
	req.Messages = append([]model.Message(nil), testRequest.Messages...)
	for turn := 1; turn <= 20; turn++ {
		resp, err := m.Generate(context.Background(), &req, func(string) error { return nil })
		if err != nil {
			tb.Fatal(err)
		}
		req.Messages = append(req.Messages, model.Message{Role: model.RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls, Reasoning: resp.Reasoning})
		for _, c := range resp.ToolCalls {
			req.Messages = append(req.Messages, model.Message{Role: model.RoleTool, ToolCallID: c.ID, Content: fmt.Sprintf("result of turn %d", turn)})
		}
	}
	return srv.Bodies()
}

// blocks flattens a Messages request into its cache-prefix order (tools,
// system, then each message's blocks) with cache_control stripped, and
// the index of the last block that carried a breakpoint.
func blocks(tb testing.TB, body []byte) (flat []string, lastMark, marks int) {
	tb.Helper()
	var r struct {
		Tools    []map[string]any `json:"tools"`
		System   []map[string]any `json:"system"`
		Messages []struct {
			Role    string           `json:"role"`
			Content []map[string]any `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		tb.Fatal(err)
	}
	lastMark = -1
	add := func(prefix string, b map[string]any) {
		if _, ok := b["cache_control"]; ok {
			marks++
			lastMark = len(flat)
			delete(b, "cache_control")
		}
		s, _ := json.Marshal(b)
		flat = append(flat, prefix+string(s))
	}
	for _, t := range r.Tools {
		add("tool:", t)
	}
	for _, s := range r.System {
		add("system:", s)
	}
	for i, m := range r.Messages {
		for _, b := range m.Content {
			add(fmt.Sprintf("%d/%s:", i, m.Role), b)
		}
	}
	return flat, lastMark, marks
}

// With prompt_caching = "auto", every request of a 20-turn task carries
// at most the API's four breakpoints, and everything up to a request's
// last breakpoint is, block for block, the start of the next request:
// the next turn reads what this one wrote. Without it, no breakpoint is
// sent.
func TestPromptCachingAutoKeepsTwentyTurnsPrefixStable(t *testing.T) {
	bodies := twentyTurns(t, true)
	if len(bodies) != 20 {
		t.Fatalf("%d requests", len(bodies))
	}
	for n := range bodies {
		flat, last, marks := blocks(t, bodies[n])
		if marks == 0 || marks > MaxAnthropicCacheBreakpoints {
			t.Fatalf("request %d: %d breakpoints", n+1, marks)
		}
		if last != len(flat)-1 {
			t.Fatalf("request %d: the last breakpoint is on block %d of %d, not the newest", n+1, last, len(flat))
		}
		if n == 0 {
			continue
		}
		prev, prevLast, _ := blocks(t, bodies[n-1])
		for i := 0; i <= prevLast; i++ {
			if i >= len(flat) || flat[i] != prev[i] {
				t.Fatalf("request %d changes block %d of request %d's cached prefix:\n%s\n%s", n+1, i, n, prev[i], flat[i])
			}
		}
	}
	for _, b := range twentyTurns(t, false) {
		if strings.Contains(string(b), "cache_control") {
			t.Fatal("provider_default sent a breakpoint")
		}
	}
}

// BenchmarkAnthropicTwentyTurnPrefix runs the 20-turn task against the
// fixture and reports the share of each request's blocks that lie in the
// previous request's cached prefix.
func BenchmarkAnthropicTwentyTurnPrefix(b *testing.B) {
	var cached, total int
	for i := 0; i < b.N; i++ {
		bodies := twentyTurns(b, true)
		for n := 1; n < len(bodies); n++ {
			flat, _, _ := blocks(b, bodies[n])
			_, prevLast, _ := blocks(b, bodies[n-1])
			cached += prevLast + 1
			total += len(flat)
		}
	}
	b.ReportMetric(float64(cached)/float64(total), "cached-blocks/block")
}
