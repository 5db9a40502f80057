package pablo

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"time"

	"github.com/pabloagent/pablo/internal/config"
	"github.com/pabloagent/pablo/internal/engine"
	"github.com/pabloagent/pablo/model"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/internal/clock"
	"github.com/pabloagent/pablo/internal/providers"
)

// fixtureKey is the fixed fake credential a loopback fixture endpoint
// receives: a fixture never sees a real key.
const fixtureKey = "pablo-fixture-key"

// httpModel builds the configured HTTP provider model (or route).
func (d *Deployment) httpModel(opts HostOptions) (model.Model, error) {
	r, err := d.Resolver(authority.ResolverOptions{LookupEnv: opts.LookupEnv, Host: opts.Host, Redact: opts.secrets})
	if err != nil {
		return nil, err
	}
	b := &modelBuilder{d: d, client: providers.NewClient(providers.ClientOptions{}), resolver: r, clock: opts.Clock}
	return b.build()
}

// FixtureModel builds the configured provider (or route) against a host
// fixture: every entry talks to endpoint, a literal-loopback plain-HTTP
// URL, with the fixed fake key "pablo-fixture-key" instead of any
// configured credential. It is refused under lock and for any other URL.
func (d *Deployment) FixtureModel(endpoint string) (model.Model, error) {
	if d.Locked() {
		return nil, &config.Error{Code: config.CodeInvalidValue, Option: "--fixture-endpoint", Message: "a fixture endpoint is never allowed under lock"}
	}
	if err := checkFixtureEndpoint(endpoint); err != nil {
		return nil, err
	}
	b := &modelBuilder{d: d, client: providers.NewClient(providers.ClientOptions{}), fixture: endpoint}
	return b.build()
}

func checkFixtureEndpoint(endpoint string) error {
	bad := func(msg string) error {
		return &config.Error{Code: config.CodeInvalidValue, Option: "--fixture-endpoint", Message: msg}
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return bad("not a URL")
	}
	if u.Scheme != "http" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return bad("a fixture endpoint is http://127.0.0.1:PORT/... or http://[::1]:PORT/..., without userinfo, query or fragment")
	}
	ip := net.ParseIP(u.Hostname())
	if ip == nil || !ip.IsLoopback() {
		return bad("a fixture endpoint must name a literal loopback address (127.0.0.1 or ::1), not a host name")
	}
	return nil
}

// modelBuilder turns model profiles and routes into models.
type modelBuilder struct {
	d        *Deployment
	client   *providers.Client
	resolver *authority.Resolver
	fixture  string
	// clock times retry backoffs (the system clock when nil).
	clock clock.Clock
	// routerEndpoint, set by tests alone, moves the complexity router off
	// its fixed endpoint while its credential is still resolved for that
	// endpoint; empty is the fixed endpoint. No deployment can set it.
	routerEndpoint string
}

func (b *modelBuilder) build() (model.Model, error) {
	o := &b.d.c.Options
	if o.ModelRoute != "" {
		return b.route(o.ModelRoute)
	}
	m, err := b.profile("/options/model", o.Model)
	if err != nil {
		return nil, err
	}
	return engine.NewProviderModel(model.Info{Provider: o.Model.Provider, Model: o.Model.ID}, m, retryPolicy(o), b.clock), nil
}

// route flattens the selected route and builds each entry.
func (b *modelBuilder) route(name string) (model.Model, error) {
	o := &b.d.c.Options
	rt, ok := o.Routes[name]
	if !ok {
		return nil, &config.Error{Code: config.CodeInvalidValue, Option: "/options/model_route", Message: fmt.Sprintf("no route named %q", name)}
	}
	if err := b.d.c.CheckRouteCapabilities(name); err != nil {
		return nil, err
	}
	entries, err := b.d.c.RouteEntries(name)
	if err != nil {
		return nil, err
	}
	ropts := providers.RouteOptions{Name: name, MaxAttempts: rt.MaxAttempts, RetryUncertainDelivery: rt.RetryUncertainDelivery,
		PerAttemptTimeout: time.Duration(rt.PerAttemptTimeoutMS) * time.Millisecond, Retry: retryPolicy(o), Clock: b.clock}
	if rt.EligibleErrors != nil {
		ropts.Eligible = []providers.RetryClass{}
		for _, e := range rt.EligibleErrors {
			ropts.Eligible = append(ropts.Eligible, providers.RetryClass(e))
		}
	}
	for _, e := range entries {
		if !e.Selectable() {
			// A model that lacks what the route requires is never
			// selected; a route with no other entry was refused above.
			continue
		}
		n := e.Model
		mo := o.Models[n]
		m, err := b.profile("/options/models/"+n, mo)
		if err != nil {
			return nil, err
		}
		ropts.Entries = append(ropts.Entries, providers.RouteEntry{Name: n, Provider: providers.Provider(mo.Provider), Model: mo.ID, Generator: m})
	}
	r, err := providers.NewRoute(ropts)
	if err != nil {
		return nil, &config.Error{Code: config.CodeInvalidValue, Option: "/options/routes/" + name, Message: err.Error()}
	}
	var cls *engine.Classifier
	if rt.Router != nil {
		kept := make([]string, len(ropts.Entries))
		for i, e := range ropts.Entries {
			kept[i] = e.Name
		}
		if cls, err = b.classifier(name, rt, kept); err != nil {
			return nil, err
		}
	}
	return routed{engine.NewRoute(name, r, cls)}, nil
}

// retryPolicy is options.model.retry as the providers take it.
func retryPolicy(o *config.Options) providers.RetryPolicy {
	attempts, initial, most := o.RetryPolicy()
	return providers.RetryPolicy{MaxAttempts: int(attempts), InitialBackoff: time.Duration(initial) * time.Millisecond, MaxBackoff: time.Duration(most) * time.Millisecond}
}

// profile builds one model profile: its endpoint, its credential (or the
// fixture's fake key) and its generation settings.
func (b *modelBuilder) profile(ptr string, m config.ModelOptions) (providers.Model, error) {
	pm, err := b.adapter(ptr, m)
	if err != nil || m.Pricing == nil {
		return pm, err
	}
	p := providers.Pricing{Input: m.Pricing.Input, Output: m.Pricing.Output, CacheRead: m.Pricing.CacheRead, CacheWrite: m.Pricing.CacheWrite}
	// Anthropic's input_tokens excludes the cache counts; the others'
	// includes the tokens read from the cache.
	return providers.Priced(pm, p, m.Provider != "anthropic"), nil
}

// adapter builds one model profile's wire adapter.
func (b *modelBuilder) adapter(ptr string, m config.ModelOptions) (providers.Model, error) {
	g, err := m.Generation(ptr)
	if err != nil {
		return nil, err
	}
	consumer, endpoint, ok := m.Target()
	if !ok {
		return nil, fmt.Errorf("pablo: provider %q at %s is not an HTTP provider; pass HostOptions.Model or use a script: %w", m.Provider, ptr, ErrUnavailable)
	}
	secret := fixtureKey
	if b.fixture != "" {
		endpoint = b.fixture
	} else {
		secret, err = b.secret(m, consumer, endpoint)
		if err != nil {
			return nil, err
		}
	}
	idle := time.Duration(m.StreamIdleTimeoutMS) * time.Millisecond
	switch m.Provider {
	case "open_responses", "openai":
		if g.Budget > 0 {
			return nil, &config.Error{Code: config.CodeInvalidValue, Option: ptr + "/reasoning", Message: m.Provider + " takes a reasoning effort, not budget_tokens"}
		}
		return providers.NewResponses(b.client, providers.ResponsesOptions{Provider: providers.Provider(m.Provider), Endpoint: endpoint, Model: m.ID, Secret: secret,
			AuthHeader: m.AuthHeader, AuthScheme: m.AuthScheme, ReasoningEffort: g.Effort, MaxOutputTokens: g.MaxOutputTokens, StreamIdleTimeout: idle})
	case "anthropic":
		if g.Effort != "" {
			return nil, &config.Error{Code: config.CodeInvalidValue, Option: ptr + "/reasoning", Message: "anthropic takes { budget_tokens = N } (at least 1024) for extended thinking, not an effort"}
		}
		return providers.NewAnthropic(b.client, providers.AnthropicOptions{Endpoint: endpoint, Model: m.ID, Secret: secret,
			ThinkingBudget: g.Budget, MaxOutputTokens: g.MaxOutputTokens, PromptCaching: m.PromptCaching == "auto", StreamIdleTimeout: idle})
	case "gemini":
		if g.Effort != "" {
			return nil, &config.Error{Code: config.CodeInvalidValue, Option: ptr + "/reasoning", Message: "gemini takes { budget_tokens = N } (its thinkingBudget), not an effort"}
		}
		return providers.NewGemini(b.client, providers.GeminiOptions{Endpoint: endpoint, Model: m.ID, Secret: secret,
			ThinkingBudget: g.Budget, MaxOutputTokens: g.MaxOutputTokens, StreamIdleTimeout: idle})
	}
	if g.Budget > 0 && m.Provider == "openai_compatible" {
		return nil, &config.Error{Code: config.CodeInvalidValue, Option: ptr + "/reasoning", Message: "openai_compatible takes a reasoning effort, not budget_tokens"}
	}
	return providers.NewChat(b.client, providers.ChatOptions{Provider: providers.Provider(m.Provider), Endpoint: endpoint, Model: m.ID,
		Secret: secret, AuthHeader: m.AuthHeader, AuthScheme: m.AuthScheme, ReasoningEffort: g.Effort, ReasoningBudget: g.Budget, MaxOutputTokens: g.MaxOutputTokens, StreamIdleTimeout: idle,
		PromptCaching: m.PromptCaching == "auto"})
}

// secret resolves a profile's credential for exactly its consumer and
// endpoint. An openai_compatible profile whose credential is not declared
// sends none (a local server usually needs no key).
func (b *modelBuilder) secret(m config.ModelOptions, consumer authority.Consumer, endpoint string) (string, error) {
	if _, declared := b.d.Credentials()[m.Credential]; !declared && m.Provider == "openai_compatible" {
		return "", nil
	}
	s, err := b.resolver.Resolve(context.Background(), m.Credential, consumer, endpoint)
	if err != nil {
		return "", fmt.Errorf("pablo: model credential: %w", err)
	}
	return s.Reveal(), nil
}
