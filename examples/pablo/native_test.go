package main

import (
	"strings"
	"testing"

	"github.com/pabloagent/pablo/internal/providertest"
)

// nativeModel is a deployment whose model is a native provider, with its
// credential from the environment (never resolved under a fixture).
func nativeModel(provider, id, consumer, extra string) string {
	return "schema_version = 1\n[options.shell]\nenabled = false\n[options.model]\nprovider = \"" + provider + "\"\nid = \"" + id + "\"\ncredential = \"native\"\n" + extra +
		"[credentials.native]\nconsumer = \"" + consumer + "\"\nsources = [{ kind = \"environment\", name = \"NATIVE_KEY\" }]\n"
}

// The acceptance of issue 31: a deployment for each native provider runs
// the demo's task (a tool call, then an answer) against its fixture
// through `pablo run --fixture-endpoint`; the second request carries the
// first turn's reasoning state as the API requires; and `doctor --probe
// provider` passes against the same fixture.
func TestNativeProviderRunsTheDemoTaskAgainstItsFixture(t *testing.T) {
	t.Parallel()
	cases := []struct {
		provider, id, consumer string
		wire                   providertest.Wire
		continuity             string
	}{
		{"anthropic", "claude-sonnet-4-5", "provider.anthropic", providertest.Anthropic, `"signature":"sig-turn-1"`},
		{"openai", "gpt-5", "provider.openai", providertest.Responses, `"encrypted_content":"enc-turn-1"`},
		{"gemini", "gemini-2.5-flash", "provider.gemini", providertest.Gemini, `"thoughtSignature":"` + providertest.GeminiSignature(1) + `"`},
	}
	for _, c := range cases {
		t.Run(c.provider, func(t *testing.T) {
			t.Parallel()
			srv := providertest.New(providertest.Options{Wire: c.wire, Reasoning: true, Turns: []providertest.Turn{
				{Calls: []providertest.Call{{ID: "call_1", Name: "fs_read", Args: `{"path":"a.txt"}`}}},
				{Text: "Paid on time."},
			}})
			defer srv.Close()
			body := nativeModel(c.provider, c.id, c.consumer, "")
			r := runReal(t, body, nil, true, "--fixture-endpoint", srv.Endpoint())
			r.completed(t)
			bodies := srv.Bodies()
			if len(bodies) != 2 {
				t.Fatalf("%d requests, want 2", len(bodies))
			}
			if !strings.Contains(string(bodies[1]), c.continuity) || !strings.Contains(string(bodies[1]), "INV-1042 paid on 2024-03-01") {
				t.Fatalf("the second request lacks the first turn's reasoning or the tool result:\n%s", bodies[1])
			}
			cfg, ws := writeConfig(t, strings.TrimPrefix(body, "schema_version = 1\n"))
			code, rep, all := doctorJSON(t, nil, "--config", cfg, "--bind", "workspace="+ws, "--probe", "provider", "--fixture-endpoint", srv.Endpoint())
			if code != 0 {
				t.Fatalf("doctor exit %d: %+v\n%s", code, rep, all)
			}
		})
	}
}

// prompt_caching = "auto" on an anthropic deployment puts cache_control
// breakpoints on the wire; without it none are sent.
func TestNativeProviderPromptCachingReachesTheWire(t *testing.T) {
	t.Parallel()
	for _, caching := range []string{"", "prompt_caching = \"auto\"\n"} {
		srv := providertest.New(providertest.Options{Wire: providertest.Anthropic})
		r := runReal(t, nativeModel("anthropic", "claude-sonnet-4-5", "provider.anthropic", caching), nil, true, "--fixture-endpoint", srv.Endpoint())
		srv.Close()
		r.completed(t)
		sent := strings.Contains(string(srv.Bodies()[0]), `"cache_control":{"type":"ephemeral"}`)
		if sent != (caching != "") {
			t.Fatalf("prompt_caching %q: breakpoints sent %v", caching, sent)
		}
	}
}

// A named price list makes every call's cost known: the task object's
// accounting carries cost_microusd computed from the fixture's usage.
func TestNativeProviderPricingReachesTheCost(t *testing.T) {
	t.Parallel()
	srv := providertest.New(providertest.Options{Wire: providertest.Anthropic})
	defer srv.Close()
	body := nativeModel("anthropic", "claude-sonnet-4-5", "provider.anthropic", "pricing = { input = 1000000, output = 2000000 }\n")
	r := runReal(t, body, nil, true, "--fixture-endpoint", srv.Endpoint())
	r.completed(t)
	// 11 input + 3 cache read at 1 micro-USD, 7 output at 2: 28.
	if !strings.Contains(r.stdout, `"cost_microusd":"28"`) {
		t.Fatalf("no computed cost in the task object: %s", r.stdout)
	}
}

// --prompt-caching auto follows the reference's rule: on Vercel it adds
// providerOptions.gateway.caching = "auto" to the body, on anthropic it
// places the cache breakpoints, and on any other provider it exits 2
// before a request is sent.
func TestPromptCachingFlagFollowsTheVercelRule(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		provider, consumer string
		wire               providertest.Wire
		marker             string
	}{
		{"vercel", "provider.vercel", providertest.Chat, `"providerOptions":{"gateway":{"caching":"auto"}}`},
		{"anthropic", "provider.anthropic", providertest.Anthropic, `"cache_control":{"type":"ephemeral"}`},
	} {
		for _, flag := range []string{"provider_default", "auto"} {
			srv := providertest.New(providertest.Options{Wire: c.wire})
			r := runReal(t, nativeModel(c.provider, "m-1", c.consumer, ""), nil, true, "--prompt-caching", flag, "--fixture-endpoint", srv.Endpoint())
			srv.Close()
			r.completed(t)
			if sent := strings.Contains(string(srv.Bodies()[0]), c.marker); sent != (flag == "auto") {
				t.Fatalf("%s --prompt-caching %s: caching marker sent %v", c.provider, flag, sent)
			}
		}
	}
	srv := providertest.New(providertest.Options{})
	defer srv.Close()
	r := runReal(t, localModel(srv.Endpoint(), ""), nil, false, "--prompt-caching", "auto")
	if r.code != 2 || !strings.Contains(r.stderr, "automatic prompt caching requires Vercel Chat Completions") || srv.Requests() != 0 {
		t.Fatalf("openai_compatible with --prompt-caching auto: exit %d, %d requests: %s", r.code, srv.Requests(), r.stderr)
	}
}

// The acceptance through the CLI: `pablo run --max-cost-microusd`
// on a priced anthropic deployment against its fixture completes the demo
// task when both calls fit and ends limit_exceeded (cost) before the
// second call otherwise. Input costs 1 micro-USD per million tokens and
// output 1000 per token, so each call's worst case is 1 + 1024*1000 and
// each actual 7001: the second call fits 1031002 and not one less.
func TestNativeProviderCostCeilingHoldsOnLiveCalls(t *testing.T) {
	t.Parallel()
	extra := "pricing = { input = 1, output = 1000000000 }\n[options.limits]\nmax_output_tokens = 1024\n"
	for _, c := range []struct {
		ceiling, status string
		requests        int
	}{{"1031002", "completed", 2}, {"1031001", "limit_exceeded", 1}} {
		srv := providertest.New(providertest.Options{Wire: providertest.Anthropic, Turns: []providertest.Turn{
			{Calls: []providertest.Call{{ID: "call_1", Name: "fs_read", Args: `{"path":"a.txt"}`}}},
			{Text: "Paid on time."},
		}})
		r := runReal(t, nativeModel("anthropic", "claude-sonnet-4-5", "provider.anthropic", extra), nil, true,
			"--max-cost-microusd", c.ceiling, "--fixture-endpoint", srv.Endpoint())
		srv.Close()
		if r.obj.Outcome.Status != c.status || srv.Requests() != c.requests {
			t.Fatalf("--max-cost-microusd %s: %s after %d requests, want %s after %d", c.ceiling, r.stdout, srv.Requests(), c.status, c.requests)
		}
		if c.status == "limit_exceeded" && !strings.Contains(r.stdout, `"limit":"cost"`) {
			t.Fatalf("the outcome does not name the cost ceiling: %s", r.stdout)
		}
	}
}
