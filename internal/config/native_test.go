package config

import (
	"strings"
	"testing"

	"github.com/pabloagent/pablo/authority"
)

// Each native provider has its credential consumer and a fixed default
// endpoint that a profile's endpoint overrides (a proxy, a compatible
// host); a credential declared for another consumer is refused.
func TestNativeProvidersHaveAConsumerAndADefaultEndpoint(t *testing.T) {
	cases := []struct {
		provider string
		consumer authority.Consumer
		endpoint string
	}{
		{"anthropic", authority.ConsumerAnthropic, AnthropicEndpoint},
		{"openai", authority.ConsumerOpenAI, OpenAIEndpoint},
		{"gemini", authority.ConsumerGemini, GeminiEndpointBase + "m" + GeminiEndpointMethod},
	}
	for _, c := range cases {
		doc := "schema_version = 1\n[options.model]\nprovider = \"" + c.provider + "\"\nid = \"m\"\ncredential = \"k\"\n[credentials.k]\nconsumer = \"" + string(c.consumer) + "\"\nsources = [{ kind = \"environment\", name = \"K\" }]\n"
		d, err := loadString(t, doc)
		if err != nil {
			t.Fatalf("%s: %v", c.provider, err)
		}
		if consumer, endpoint, ok := d.Options.Model.Target(); !ok || consumer != c.consumer || endpoint != c.endpoint {
			t.Fatalf("%s: %s %s", c.provider, consumer, endpoint)
		}
		m := d.Options.Model
		m.Endpoint = "https://proxy.example.test/v1/x"
		if _, endpoint, _ := m.Target(); endpoint != m.Endpoint {
			t.Fatalf("%s: the endpoint does not override the default: %s", c.provider, endpoint)
		}
		if _, err := loadString(t, "schema_version = 1\n[options.model]\nprovider = \""+c.provider+"\"\nid = \"m\"\ncredential = \"k\"\n[credentials.k]\nconsumer = \"provider.vercel\"\nsources = [{ kind = \"environment\", name = \"K\" }]\n"); err == nil {
			t.Fatalf("%s: a vercel credential was accepted", c.provider)
		}
		if _, err := loadString(t, "schema_version = 1\n[options.model]\nprovider = \""+c.provider+"\"\ncredential = \"k\"\n[credentials.k]\nconsumer = \""+string(c.consumer)+"\"\nsources = [{ kind = \"environment\", name = \"K\" }]\n"); err == nil {
			t.Fatalf("%s: a profile without id was accepted", c.provider)
		}
	}
}

// prompt_caching = "auto" (the key or the --prompt-caching override)
// follows the reference's rule, widened to the native providers: Vercel
// Chat Completions and anthropic, openai and gemini take it; any other
// provider is refused at load, before a credential is looked at, naming
// the key and what to write instead.
func TestPromptCachingAutoNeedsVercelOrANativeProvider(t *testing.T) {
	model := func(provider, extra string) string {
		consumer := "provider." + provider
		return "schema_version = 1\n[options.model]\nprovider = \"" + provider + "\"\nid = \"m\"\ncredential = \"k\"\n" + extra +
			"[credentials.k]\nconsumer = \"" + consumer + "\"\nsources = [{ kind = \"environment\", name = \"K\" }]\n"
	}
	auto := []Override{{Target: "model.prompt_caching", Value: "auto"}}
	for _, p := range []string{"vercel", "anthropic", "openai", "gemini"} {
		d, err := loadString(t, model(p, ""), func(o *LoadOptions) { o.Overrides = auto })
		if err != nil || d.Options.Model.PromptCaching != "auto" {
			t.Fatalf("%s: %v", p, err)
		}
	}
	for _, p := range []string{"openrouter", "openai_compatible"} {
		extra := ""
		if p == "openai_compatible" {
			extra = "endpoint = \"https://models.example/v1/chat/completions\"\n"
		}
		_, err := loadString(t, model(p, extra), func(o *LoadOptions) { o.Overrides = auto })
		ce := wantCode(t, err, CodeInvalidValue, "/options/model/prompt_caching")
		if !strings.Contains(ce.Message, "automatic prompt caching requires Vercel Chat Completions") {
			t.Fatalf("%s: %q", p, ce.Message)
		}
		_, err = loadString(t, model(p, extra+"prompt_caching = \"auto\"\n"))
		wantCode(t, err, CodeInvalidValue, "/options/model/prompt_caching")
	}
}

// Under lock --prompt-caching is an override like any other: refused
// unless allowed_run_overrides lists model.prompt_caching, and then it may
// only turn the deployment's caching off, never on.
func TestPromptCachingOverrideUnderLockMayOnlyTurnCachingOff(t *testing.T) {
	doc := func(caching, allowed string) string {
		return "schema_version = 1\n[deployment]\nlocked = true\nallowed_run_overrides = [" + allowed + "]\n[options.model]\nprovider = \"anthropic\"\nid = \"m\"\ncredential = \"k\"\n" + caching +
			"[credentials.k]\nconsumer = \"provider.anthropic\"\nsources = [{ kind = \"environment\", name = \"K\" }]\n"
	}
	with := func(v string) func(*LoadOptions) {
		return func(o *LoadOptions) { o.Overrides = []Override{{Target: "model.prompt_caching", Value: v}} }
	}
	_, err := loadString(t, doc("prompt_caching = \"auto\"\n", `"input"`), with("provider_default"))
	wantCode(t, err, CodeOverrideForbidden, "/options/model/prompt_caching")
	listed := `"input", "model.prompt_caching"`
	d, err := loadString(t, doc("prompt_caching = \"auto\"\n", listed), with("provider_default"))
	if err != nil || d.Options.Model.PromptCaching != "provider_default" {
		t.Fatalf("turning caching off under lock: %v", err)
	}
	_, err = loadString(t, doc("", listed), with("auto"))
	wantCode(t, err, CodeOverrideForbidden, "/options/model/prompt_caching")
}
