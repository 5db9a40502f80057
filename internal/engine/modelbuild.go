package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"time"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/internal/clock"
	"github.com/pabloagent/pablo/internal/config"
	"github.com/pabloagent/pablo/internal/providers"
	"github.com/pabloagent/pablo/model"
)

// FixtureKey is the fixed fake credential a loopback fixture endpoint
// receives: a fixture never sees a real key.
const FixtureKey = "pablo-fixture-key"

// ErrUnavailable marks a configured capability this build cannot provide.
var ErrUnavailable = errors.New("pablo: not available")

// ModelBuilder turns a deployment's model profiles and routes into
// models.
type ModelBuilder struct {
	Deployment *config.Deployment
	Client     *providers.Client
	// Resolver resolves each profile's credential; unused with a Fixture.
	Resolver *authority.Resolver
	// Fixture, when set, is the loopback endpoint every entry talks to,
	// with FixtureKey for every credential.
	Fixture string
	// Clock times retry backoffs (the system clock when nil).
	Clock clock.Clock
	// RouterEndpoint, set by tests alone, moves the complexity router off
	// its fixed endpoint while its credential is still resolved for that
	// endpoint; empty is the fixed endpoint. No deployment can set it.
	RouterEndpoint string
	// WrapRoute, when set, is applied to a route Build returns.
	WrapRoute func(*Route) model.Model
}

func (b *ModelBuilder) Build() (model.Model, error) {
	o := &b.Deployment.Options
	if o.ModelRoute != "" {
		return b.route(o.ModelRoute)
	}
	m, err := b.profile("/options/model", o.Model)
	if err != nil {
		return nil, err
	}
	return NewProviderModel(model.Info{Provider: o.Model.Provider, Model: o.Model.ID}, m, retryPolicy(o), b.Clock), nil
}

// route flattens the selected route and builds each entry.
func (b *ModelBuilder) route(name string) (model.Model, error) {
	o := &b.Deployment.Options
	rt, ok := o.Routes[name]
	if !ok {
		return nil, &config.Error{Code: config.CodeInvalidValue, Option: "/options/model_route", Message: fmt.Sprintf("no route named %q", name)}
	}
	if err := b.Deployment.CheckRouteCapabilities(name); err != nil {
		return nil, err
	}
	entries, err := b.Deployment.RouteEntries(name)
	if err != nil {
		return nil, err
	}
	ropts := providers.RouteOptions{Name: name, MaxAttempts: rt.MaxAttempts, RetryUncertainDelivery: rt.RetryUncertainDelivery,
		PerAttemptTimeout: time.Duration(rt.PerAttemptTimeoutMS) * time.Millisecond, Retry: retryPolicy(o), Clock: b.Clock}
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
	var cls *Classifier
	if rt.Router != nil {
		kept := make([]string, len(ropts.Entries))
		for i, e := range ropts.Entries {
			kept[i] = e.Name
		}
		if cls, err = b.classifier(name, rt, kept); err != nil {
			return nil, err
		}
	}
	if b.WrapRoute != nil {
		return b.WrapRoute(NewRoute(name, r, cls)), nil
	}
	return NewRoute(name, r, cls), nil
}

// retryPolicy is options.model.retry as the providers take it.
func retryPolicy(o *config.Options) providers.RetryPolicy {
	attempts, initial, most := o.RetryPolicy()
	return providers.RetryPolicy{MaxAttempts: int(attempts), InitialBackoff: time.Duration(initial) * time.Millisecond, MaxBackoff: time.Duration(most) * time.Millisecond}
}

// profile builds one model profile: its endpoint, its credential (or the
// fixture's fake key) and its generation settings.
func (b *ModelBuilder) profile(ptr string, m config.ModelOptions) (providers.Model, error) {
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
func (b *ModelBuilder) adapter(ptr string, m config.ModelOptions) (providers.Model, error) {
	g, err := m.Generation(ptr)
	if err != nil {
		return nil, err
	}
	consumer, endpoint, ok := m.Target()
	if !ok {
		return nil, fmt.Errorf("pablo: provider %q at %s is not an HTTP provider; pass HostOptions.Model or use a script: %w", m.Provider, ptr, ErrUnavailable)
	}
	secret := FixtureKey
	if b.Fixture != "" {
		endpoint = b.Fixture
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
		return providers.NewResponses(b.Client, providers.ResponsesOptions{Provider: providers.Provider(m.Provider), Endpoint: endpoint, Model: m.ID, Secret: secret,
			AuthHeader: m.AuthHeader, AuthScheme: m.AuthScheme, ReasoningEffort: g.Effort, MaxOutputTokens: g.MaxOutputTokens, StreamIdleTimeout: idle})
	case "anthropic":
		if g.Effort != "" {
			return nil, &config.Error{Code: config.CodeInvalidValue, Option: ptr + "/reasoning", Message: "anthropic takes { budget_tokens = N } (at least 1024) for extended thinking, not an effort"}
		}
		return providers.NewAnthropic(b.Client, providers.AnthropicOptions{Endpoint: endpoint, Model: m.ID, Secret: secret,
			ThinkingBudget: g.Budget, MaxOutputTokens: g.MaxOutputTokens, PromptCaching: m.PromptCaching == "auto", StreamIdleTimeout: idle})
	case "gemini":
		if g.Effort != "" {
			return nil, &config.Error{Code: config.CodeInvalidValue, Option: ptr + "/reasoning", Message: "gemini takes { budget_tokens = N } (its thinkingBudget), not an effort"}
		}
		return providers.NewGemini(b.Client, providers.GeminiOptions{Endpoint: endpoint, Model: m.ID, Secret: secret,
			ThinkingBudget: g.Budget, MaxOutputTokens: g.MaxOutputTokens, StreamIdleTimeout: idle})
	}
	if g.Budget > 0 && m.Provider == "openai_compatible" {
		return nil, &config.Error{Code: config.CodeInvalidValue, Option: ptr + "/reasoning", Message: "openai_compatible takes a reasoning effort, not budget_tokens"}
	}
	return providers.NewChat(b.Client, providers.ChatOptions{Provider: providers.Provider(m.Provider), Endpoint: endpoint, Model: m.ID,
		Secret: secret, AuthHeader: m.AuthHeader, AuthScheme: m.AuthScheme, ReasoningEffort: g.Effort, ReasoningBudget: g.Budget, MaxOutputTokens: g.MaxOutputTokens, StreamIdleTimeout: idle,
		PromptCaching: m.PromptCaching == "auto"})
}

// secret resolves a profile's credential for exactly its consumer and
// endpoint. An openai_compatible profile whose credential is not declared
// sends none (a local server usually needs no key).
func (b *ModelBuilder) secret(m config.ModelOptions, consumer authority.Consumer, endpoint string) (string, error) {
	if _, declared := b.Deployment.Credentials()[m.Credential]; !declared && m.Provider == "openai_compatible" {
		return "", nil
	}
	s, err := b.Resolver.Resolve(context.Background(), m.Credential, consumer, endpoint)
	if err != nil {
		return "", fmt.Errorf("pablo: model credential: %w", err)
	}
	return s.Reveal(), nil
}

// RouterPath is where a fixture serves the evaluation-model endpoint.
const RouterPath = "/v4/ai/evaluation-model"

// classifier builds the router of route name over the entries names it
// can select (its flattened entries whose models have what the route
// requires): its credential is the Vercel credential, resolved for exactly the
// evaluation-model endpoint (a fixture gets the fixed fake key, at the
// fixture's own origin).
func (b *ModelBuilder) classifier(name string, rt config.Route, names []string) (*Classifier, error) {
	r := rt.Router
	ptr := "/options/routes/" + name + "/router"
	endpoint, secret := b.RouterEndpoint, FixtureKey
	if b.Fixture != "" {
		u, err := url.Parse(b.Fixture)
		if err != nil {
			return nil, err // checked by the deployment
		}
		endpoint = (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: RouterPath}).String()
	} else {
		s, err := b.Resolver.Resolve(context.Background(), r.Credential, authority.ConsumerVercel, config.RouterEndpoint)
		if err != nil {
			return nil, fmt.Errorf("pablo: router credential at %s: %w", ptr, err)
		}
		secret = s.Reveal()
	}
	c := &Classifier{Entry: map[string]int{}}
	opts := providers.RouterOptions{Endpoint: endpoint, Secret: secret, Instructions: r.Instructions,
		Timeout: time.Duration(r.TimeoutMS) * time.Millisecond}
	for _, cat := range slices.Sorted(maps.Keys(r.Categories)) {
		rc := r.Categories[cat]
		i := slices.Index(names, rc.Model)
		if i < 0 {
			return nil, &config.Error{Code: config.CodeInvalidValue, Option: ptr + "/categories/" + cat + "/model",
				Message: fmt.Sprintf("model %q is not an entry of route %q that has the route's required capabilities", rc.Model, name)}
		}
		c.Entry[cat] = i
		opts.Categories = append(opts.Categories, providers.RouterCategory{Name: cat, Description: rc.Description})
	}
	var err error
	if c.Router, err = providers.NewRouter(b.Client, opts); err != nil {
		return nil, &config.Error{Code: config.CodeInvalidValue, Option: ptr, Message: err.Error()}
	}
	return c, nil
}
