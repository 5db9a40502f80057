package providers

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/pabloagent/pablo/internal/providertest"
	"github.com/pabloagent/pablo/model"
)

// Each native adapter attests the worst case of the request it is about
// to send: input from the wire body's size plus the documented overhead,
// output from the allowance on the wire (Gemini's thinking budget
// added), and the actual usage the fixture reports stays under it.
func TestNativeAdaptersAttestTheRequestsWorstCase(t *testing.T) {
	t.Parallel()
	req := &model.Request{Instructions: "Answer briefly.", MaxOutputTokens: 4096, Messages: []model.Message{{Role: model.RoleUser, Content: "Was INV-1042 paid?"}},
		Tools: []model.ToolDef{{Name: "fs_read", Description: "Read a file.", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}}}
	c := NewClient(ClientOptions{})
	cases := []struct {
		name   string
		wire   providertest.Wire
		build  func(endpoint string) (Model, error)
		output uint64
	}{
		{"anthropic", providertest.Anthropic, func(ep string) (Model, error) {
			return NewAnthropic(c, AnthropicOptions{Endpoint: ep, Model: "claude", Secret: testSecret, MaxOutputTokens: 2048, ThinkingBudget: 1024})
		}, 2048},
		{"openai", providertest.Responses, func(ep string) (Model, error) {
			return NewResponses(c, ResponsesOptions{Provider: OpenAI, Endpoint: ep, Model: "gpt", Secret: testSecret})
		}, 4096},
		{"gemini", providertest.Gemini, func(ep string) (Model, error) {
			return NewGemini(c, GeminiOptions{Endpoint: ep, Model: "gemini", Secret: testSecret, ThinkingBudget: 512})
		}, 4096 + 512},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := providertest.New(providertest.Options{Wire: tc.wire})
			defer srv.Close()
			m, err := tc.build(srv.Endpoint())
			if err != nil {
				t.Fatal(err)
			}
			b, err := m.(model.Bounder).Bound(req)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := m.Generate(context.Background(), req, func(string) error { return nil })
			if err != nil {
				t.Fatal(err)
			}
			body := srv.Bodies()[0]
			if b.InputTokens != uint64(len(body))+BoundOverheadTokens || b.OutputTokens != tc.output {
				t.Fatalf("bound %+v for a %d-byte body, want input %d and output %d", b, len(body), len(body)+BoundOverheadTokens, tc.output)
			}
			u := resp.Usage
			if in, out := *u.InputTokens, *u.OutputTokens; in > b.InputTokens || out > b.OutputTokens {
				t.Fatalf("usage %d/%d above the bound %+v", in, out, b)
			}
			if _, ok := b.CostMicroUSD(); ok {
				t.Fatal("an unpriced model attests a cost")
			}
		})
	}
}

// A bound is refused, never guessed: an open_responses server's
// tokenizer is unknown, Chat Completions gateways attest nothing (as the
// reference's), and a request without an output allowance has no output
// bound.
func TestAdaptersWithoutAKnownBoundAttestNone(t *testing.T) {
	t.Parallel()
	c := NewClient(ClientOptions{})
	req := &model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}}
	capped := &model.Request{Messages: req.Messages, MaxOutputTokens: 100}
	open, _ := NewResponses(c, ResponsesOptions{Endpoint: "http://127.0.0.1:1/v1/responses", Model: "m"})
	oai, _ := NewResponses(c, ResponsesOptions{Provider: OpenAI, Endpoint: "http://127.0.0.1:1/v1/responses", Model: "m"})
	gem, _ := NewGemini(c, GeminiOptions{Endpoint: "http://127.0.0.1:1/x", Model: "m"})
	chat, _ := NewChat(c, ChatOptions{Provider: Vercel, Endpoint: "http://127.0.0.1:1/v1/chat/completions", Model: "m"})
	for name, tc := range map[string]struct {
		m   Model
		req *model.Request
	}{
		"open_responses": {open, capped}, "openai without max_output_tokens": {oai, req},
		"gemini without maxOutputTokens": {gem, req}, "vercel": {Priced(chat, Pricing{Input: 1, Output: 1}, true), capped},
	} {
		bd, ok := tc.m.(model.Bounder)
		if !ok {
			continue
		}
		if _, err := bd.Bound(tc.req); !errors.Is(err, model.ErrUnbounded) {
			t.Errorf("%s: Bound gave %v, want model.ErrUnbounded", name, err)
		}
	}
	if _, ok := Model(chat).(model.Bounder); ok {
		t.Error("a Chat Completions model attests a bound")
	}
}

// A priced model's cost bound prices every input token at the dearest
// input price (a cache write here), rounds up, and adds the output at its
// price; it is the largest cost the usage under the token bound can have.
func TestPricedBoundUsesTheDearestInputPrice(t *testing.T) {
	t.Parallel()
	m, _ := NewAnthropic(NewClient(ClientOptions{}), AnthropicOptions{Endpoint: "http://127.0.0.1:1/v1/messages", Model: "c"})
	p := Pricing{Input: 3_000_000, Output: 15_000_000, CacheRead: u64(300_000), CacheWrite: u64(3_750_000)}
	req := &model.Request{MaxOutputTokens: 1000, Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}}
	b, err := Priced(m, p, false).(model.Bounder).Bound(req)
	if err != nil {
		t.Fatal(err)
	}
	in := b.InputTokens
	if want := (in*3_750_000 + 999_999) / 1_000_000; !b.Priced || b.InputCostMicroUSD != want || b.OutputPrice != 15_000_000 {
		t.Fatalf("bound %+v, want input cost %d", b, want)
	}
	cost, ok := b.CostMicroUSD()
	if !ok || cost != b.InputCostMicroUSD+15_000 {
		t.Fatalf("cost bound %d %v", cost, ok)
	}
	// Every split of the input bound between plain, cache-read and
	// cache-write tokens, at the full output, costs no more.
	for _, split := range [][3]uint64{{in, 0, 0}, {0, in, 0}, {0, 0, in}, {in / 3, in / 3, in - 2*(in/3)}} {
		actual, _ := p.Cost(model.Usage{InputTokens: &split[0], CacheReadTokens: &split[1], CacheWriteTokens: &split[2], OutputTokens: u64(1000)}, false)
		if actual > cost {
			t.Fatalf("usage %v costs %d, above the bound %d", split, actual, cost)
		}
	}
}
