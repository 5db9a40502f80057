package providers

import (
	"context"
	"testing"

	"github.com/pabloagent/pablo/internal/providertest"
	"github.com/pabloagent/pablo/model"
)

func u64(n uint64) *uint64 { return &n }

// Cost is computed from usage and prices, rounded up once: Anthropic's
// input excludes the cache counts, the others' includes the cache reads;
// an unset cache price is the input price.
func TestPricingComputesCostFromUsage(t *testing.T) {
	p := Pricing{Input: 3_000_000, Output: 15_000_000, CacheRead: u64(300_000), CacheWrite: u64(3_750_000)}
	u := model.Usage{InputTokens: u64(1000), OutputTokens: u64(100), CacheReadTokens: u64(400), CacheWriteTokens: u64(200)}
	// 1000*3 + 100*15 + 400*0.3 + 200*3.75 = 3000+1500+120+750 = 5370
	if c, ok := p.Cost(u, false); !ok || c != 5370 {
		t.Fatalf("anthropic: %d %v", c, ok)
	}
	// (1000-400)*3 + 1500 + 120 + 750 = 4170
	if c, ok := p.Cost(u, true); !ok || c != 4170 {
		t.Fatalf("openai: %d %v", c, ok)
	}
	if c, _ := (Pricing{Input: 1, Output: 1}).Cost(model.Usage{InputTokens: u64(1), OutputTokens: u64(0)}, false); c != 1 {
		t.Fatalf("a fraction of a micro-USD rounds up: %d", c)
	}
	if _, ok := p.Cost(model.Usage{InputTokens: u64(1)}, false); ok {
		t.Fatal("a cost without output tokens")
	}
	srv := providertest.New(providertest.Options{Wire: providertest.Anthropic})
	defer srv.Close()
	m, _ := NewAnthropic(NewClient(ClientOptions{}), AnthropicOptions{Endpoint: srv.Endpoint(), Model: "c", Secret: testSecret})
	resp, err := Priced(m, Pricing{Input: 1_000_000, Output: 2_000_000}, false).Generate(context.Background(), testRequest, func(string) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	// The fixture reports 11 input, 3 cache read, 7 output: 11 + 3 + 14.
	if resp.Usage.CostMicroUSD == nil || *resp.Usage.CostMicroUSD != 28 {
		t.Fatalf("cost %v", resp.Usage.CostMicroUSD)
	}
}
