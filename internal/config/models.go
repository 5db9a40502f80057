package config

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strconv"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/internal/endpoint"
)

// The fixed gateway endpoints of the reference's providers.
const (
	VercelEndpoint     = "https://ai-gateway.vercel.sh/v1/chat/completions"
	OpenRouterEndpoint = "https://openrouter.ai/api/v1/chat/completions"
)

// The default endpoints of the native providers; a profile's endpoint
// overrides them (a proxy, a compatible host).
const (
	AnthropicEndpoint = "https://api.anthropic.com/v1/messages"
	OpenAIEndpoint    = "https://api.openai.com/v1/responses"
	// GeminiEndpointBase + id + GeminiEndpointMethod is a gemini
	// profile's default endpoint.
	GeminiEndpointBase   = "https://generativelanguage.googleapis.com/v1beta/models/"
	GeminiEndpointMethod = ":streamGenerateContent"
)

// RouterEndpoint is where a route's complexity router classifies a task
// (the Vercel AI Gateway's evaluation-model endpoint); its credential is
// bound to this destination.
const RouterEndpoint = "https://ai-gateway.vercel.sh/v4/ai/evaluation-model"

// Target returns the credential consumer and the endpoint of the profile's
// provider: the fixed gateway of vercel and openrouter, the profile's own
// endpoint for open_responses and openai_compatible. ok is false for a
// provider that sends no HTTP request (script).
func (m ModelOptions) Target() (consumer authority.Consumer, endpoint string, ok bool) {
	switch m.Provider {
	case "vercel":
		return authority.ConsumerVercel, VercelEndpoint, true
	case "openrouter":
		return authority.ConsumerOpenRouter, OpenRouterEndpoint, true
	case "open_responses":
		return authority.ConsumerOpenResponses, m.Endpoint, true
	case "openai_compatible":
		return authority.ConsumerOpenAICompatible, m.Endpoint, true
	case "anthropic":
		return authority.ConsumerAnthropic, or(m.Endpoint, AnthropicEndpoint), true
	case "openai":
		return authority.ConsumerOpenAI, or(m.Endpoint, OpenAIEndpoint), true
	case "gemini":
		return authority.ConsumerGemini, or(m.Endpoint, GeminiEndpointBase+m.ID+GeminiEndpointMethod), true
	}
	return "", "", false
}

func or(s, def string) string {
	if s != "" {
		return s
	}
	return def
}

// Generation is how a profile asks its provider to generate.
type Generation struct {
	// Effort is the reasoning effort; "" sends none (provider_default).
	Effort string
	// Budget is the reasoning token budget, or 0.
	Budget uint64
	// MaxOutputTokens is a named model's model_options.max_output_tokens,
	// or 0.
	MaxOutputTokens int64
}

// Generation reads the profile's generation settings: options.model's
// reasoning, or a named model's model_options (its reasoning and output
// bound). ptr is the profile's pointer, for the diagnostic.
func (m ModelOptions) Generation(ptr string) (Generation, error) {
	var g Generation
	reasoning := m.Reasoning
	if len(m.ModelOptions) > 0 {
		var extra struct {
			MaxOutputTokens int64           `json:"max_output_tokens"`
			Reasoning       json.RawMessage `json:"reasoning"`
		}
		if err := json.Unmarshal(m.ModelOptions, &extra); err != nil {
			return g, invalid(ptr+"/model_options", "malformed model_options")
		}
		reasoning, g.MaxOutputTokens = extra.Reasoning, extra.MaxOutputTokens
	}
	var err error
	if g.Effort, g.Budget, err = parseReasoning(reasoning); err != nil {
		return g, invalid(ptr+"/reasoning", "%s", err.Error())
	}
	return g, nil
}

// parseReasoning reads a reasoning setting: an effort string or
// {budget_tokens = N}; provider_default (or nothing) sends none.
func parseReasoning(raw json.RawMessage) (effort string, budget uint64, err error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", 0, nil
	}
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &effort); err != nil {
			return "", 0, err
		}
		if effort == "provider_default" {
			effort = ""
		}
		return effort, 0, nil
	}
	var b struct {
		BudgetTokens uint64 `json:"budget_tokens"`
	}
	if err := json.Unmarshal(raw, &b); err != nil {
		return "", 0, fmt.Errorf("reasoning is an effort or {budget_tokens = N}")
	}
	return "", b.BudgetTokens, nil
}

// defaultModelID is the id options.model gets when it names none: the
// gateways' default model, or "script"; "" where an id is required.
func defaultModelID(provider string) string {
	switch provider {
	case "vercel":
		return "zai/glm-5.3-flash"
	case "openrouter":
		return "z-ai/glm-5.3-flash"
	case "script":
		return "script"
	}
	return ""
}

// The defaults of options.model.retry.
const (
	RetryDefaultMaxAttempts      = 3
	RetryDefaultInitialBackoffMS = 500
	RetryDefaultMaxBackoffMS     = 30_000
)

// RetryPolicy is options.model.retry with its defaults filled in: the
// attempts on one entry (0 or 1: no retry) and the backoff bounds in ms.
func (o *Options) RetryPolicy() (attempts, initialMS, maxMS int64) {
	attempts, initialMS, maxMS = RetryDefaultMaxAttempts, RetryDefaultInitialBackoffMS, RetryDefaultMaxBackoffMS
	if r := o.Model.Retry; r != nil {
		if r.MaxAttempts != nil {
			attempts = *r.MaxAttempts
		}
		if r.InitialBackoffMS != nil {
			initialMS = *r.InitialBackoffMS
		}
		if r.MaxBackoffMS != nil {
			maxMS = *r.MaxBackoffMS
		}
	}
	return attempts, initialMS, maxMS
}

// checkModels applies the provider rules to the single model (when no
// route is selected) and to every named model, and returns the credential
// references of the models in use: the single model, or every model the
// selected route reaches.
func (d *Deployment) checkModels(v *view, inUse []string) ([]credUse, error) {
	o := v.o
	var uses []credUse
	if r := o.Model.Retry; r != nil {
		initial, most := int64(RetryDefaultInitialBackoffMS), int64(RetryDefaultMaxBackoffMS)
		if r.InitialBackoffMS != nil {
			initial = *r.InitialBackoffMS
		}
		if r.MaxBackoffMS != nil {
			most = *r.MaxBackoffMS
		}
		if initial > most {
			return nil, invalid("/options/model/retry/initial_backoff_ms", "initial_backoff_ms (%d) is above max_backoff_ms (%d)", initial, most)
		}
	}
	if o.ModelRoute == "" {
		if err := d.checkModel("/options/model", o.Model); err != nil {
			return nil, err
		}
		if err := checkReasoning("/options/model", o.Model, o.Limits.MaxOutputTokens); err != nil {
			return nil, err
		}
		if u, ok := modelCredential("/options/model", o.Model, v.explicit("/options/model/credential")); ok {
			uses = append(uses, u)
		}
	}
	for _, name := range sortedKeysOf(o.Models) {
		ptr := "/options/models" + pointer(name)
		m := o.Models[name]
		if err := checkNamedModel(ptr, m); err != nil {
			return nil, err
		}
		if err := d.checkModel(ptr, m); err != nil {
			return nil, err
		}
		if err := checkReasoning(ptr, m, o.Limits.MaxOutputTokens); err != nil {
			return nil, err
		}
		if slices.Contains(inUse, name) {
			if u, ok := modelCredential(ptr, m, true); ok {
				uses = append(uses, u)
			}
		}
	}
	for _, name := range sortedKeysOf(o.Routes) {
		if r := o.Routes[name].Router; r != nil {
			if outer := nestingRoute(o, name); outer != "" {
				return nil, &Error{Code: CodeUnsupportedFeature, Option: "/options/routes" + pointer(name) + "/router",
					Message: fmt.Sprintf("route %q has a router but is an entry of route %q: a router only selects the entry of the task's own route; move the router to %q", name, outer, outer)}
			}
			// A route that cannot be flattened was refused already.
			entries, _ := d.RouteEntries(name)
			var flat []string
			for _, e := range entries {
				if len(e.Missing) == 0 {
					flat = append(flat, e.Model)
				}
			}
			u, err := checkRouter("/options/routes"+pointer(name)+"/router", r, o.Models, flat)
			if err != nil {
				return nil, err
			}
			uses = append(uses, u)
		}
	}
	return uses, nil
}

// checkNamedModel requires a named model to say its provider, its id and
// (unless it is a script) its credential: they have no defaults.
func checkNamedModel(ptr string, m ModelOptions) error {
	switch {
	case m.Provider == "":
		return invalid(ptr, "named models need provider")
	case m.ID == "":
		return invalid(ptr, "named models need id")
	case m.Credential == "" && m.Provider != "script":
		return invalid(ptr, "named models need credential")
	}
	return nil
}

// checkModel applies the provider rules to one model profile: which keys
// each provider takes and needs, and an https endpoint.
func (d *Deployment) checkModel(ptr string, m ModelOptions) error {
	hasAuth := m.AuthHeader != "" || m.AuthScheme != ""
	hasProfile := m.CapabilityProfile != ""
	if m.Script != nil && m.Provider != "script" {
		return invalid(ptr+"/script", "script is only for provider = \"script\"")
	}
	if m.PromptCaching == "auto" {
		switch m.Provider {
		case "vercel", "anthropic", "openai", "gemini":
		default:
			return invalid(ptr+"/prompt_caching", "automatic prompt caching requires Vercel Chat Completions or a native provider (anthropic, openai, gemini), not %s; use prompt_caching = \"provider_default\"", m.Provider)
		}
	}
	switch m.Provider {
	case "vercel", "openrouter":
		if _, fixed, _ := m.Target(); m.Endpoint != "" && m.Endpoint != fixed {
			return invalid(ptr+"/endpoint", "the %s endpoint is fixed (%s); use provider = \"openai_compatible\" for another base URL", m.Provider, fixed)
		}
		if hasAuth || hasProfile {
			return invalid(ptr, "auth_header, auth_scheme and capability_profile are only for open_responses and openai_compatible")
		}
	case "open_responses":
		switch {
		case m.Endpoint == "":
			return invalid(ptr+"/endpoint", "open_responses needs an explicit HTTPS endpoint")
		case !hasProfile:
			return invalid(ptr+"/capability_profile", "open_responses needs capability_profile = \"open-responses-text-tools-v1\"")
		case m.ID == "":
			return invalid(ptr+"/id", "open_responses needs an explicit model id")
		}
	case "anthropic", "openai", "gemini":
		switch {
		case hasAuth || hasProfile:
			return invalid(ptr, "auth_header, auth_scheme and capability_profile are only for open_responses and openai_compatible")
		case m.ID == "":
			return invalid(ptr+"/id", "%s needs an explicit model id", m.Provider)
		}
	case "openai_compatible":
		switch {
		case m.Endpoint == "":
			return invalid(ptr+"/endpoint", "openai_compatible needs endpoint, the Chat Completions URL")
		case hasProfile:
			return invalid(ptr+"/capability_profile", "capability_profile is only for open_responses")
		case m.ID == "":
			return invalid(ptr+"/id", "openai_compatible needs an explicit model id")
		}
	case "script":
		if m.Script == nil {
			return invalid(ptr+"/script", "the script provider needs script, a path to a script file")
		}
		if m.Endpoint != "" || hasAuth || hasProfile {
			return invalid(ptr, "the script provider takes no endpoint or auth settings")
		}
	}
	if m.Endpoint != "" {
		return d.checkModelEndpoint(ptr+"/endpoint", m.Endpoint)
	}
	return nil
}

// checkModelEndpoint requires a model endpoint to be https, or plain http
// to this host's loopback interface (a local model server: Ollama, vLLM,
// llama.cpp; the traffic never leaves the host). No host switch is needed
// for that; a locked deployment accepts it only where an [[authority]]
// layer's provider_endpoints lists that exact endpoint, so lock still
// names every destination. A refusal says what would allow the endpoint.
func (d *Deployment) checkModelEndpoint(ptr, raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return invalid(ptr, "not a URL")
	}
	if endpoint.CheckScheme(u, true) != nil {
		return invalid(ptr, "%s: a model endpoint must use https; plain http is allowed only to this host's loopback interface (http://127.0.0.1, http://[::1], http://localhost)", endpoint.ErrPlainHTTP.Error())
	}
	if u.Scheme == "https" || !d.locked || d.loopbackListed(raw) {
		return nil
	}
	return invalid(ptr, "a locked deployment sends to a plain-http loopback endpoint only where an [[authority]] layer's provider_endpoints lists it: add %q to provider_endpoints, or use https", raw)
}

// loopbackListed reports whether some authority layer lists endpoint in
// its provider_endpoints.
func (d *Deployment) loopbackListed(raw string) bool {
	for _, l := range d.layers {
		if l.Has("provider_endpoints") && slices.Contains(l.ProviderEndpoints, raw) {
			return true
		}
	}
	return false
}

// modelCredential is the credential reference of an HTTP provider's
// profile, bound to the provider's consumer and endpoint.
func modelCredential(ptr string, m ModelOptions, explicit bool) (credUse, bool) {
	consumer, dest, ok := m.Target()
	if !ok || m.Credential == "" {
		return credUse{}, false
	}
	return credUse{ptr: ptr + "/credential", name: m.Credential, consumer: consumer, destination: dest, explicit: explicit}, true
}

// checkRouter requires a route's router to be complete and each of its
// categories to name a declared model; its credential goes to the
// gateway's classifier. A category selects the route's entry of its
// model, so that model must be one of entries, the route's flattened
// entries that can be selected.
func checkRouter(ptr string, r *Router, models map[string]ModelOptions, entries []string) (credUse, error) {
	for _, missing := range []struct {
		key  string
		gone bool
	}{{"provider", r.Provider == ""}, {"model", r.Model == ""}, {"credential", r.Credential == ""},
		{"instructions", r.Instructions == ""}, {"timeout_ms", r.TimeoutMS == 0}, {"categories", r.Categories == nil}} {
		if missing.gone {
			return credUse{}, invalid(ptr, "the router needs %s", missing.key)
		}
	}
	if len(r.Categories) < 2 {
		return credUse{}, invalid(ptr+"/categories", "a router needs 2..10 categories")
	}
	for _, name := range sortedKeysOf(r.Categories) {
		m := r.Categories[name].Model
		if !hasKey(models, m) {
			return credUse{}, invalid(ptr+"/categories"+pointer(name)+"/model", "no model named %q", m)
		}
		if !slices.Contains(entries, m) {
			return credUse{}, invalid(ptr+"/categories"+pointer(name)+"/model", "model %q is not a selectable entry of this route (an entry whose model has the route's required capabilities); a category selects one of the route's entries", m)
		}
	}
	return credUse{ptr: ptr + "/credential", name: r.Credential, consumer: authority.ConsumerVercel, destination: RouterEndpoint, explicit: true}, nil
}

// nestingRoute is a route that lists route name as an entry, or "".
func nestingRoute(o *Options, name string) string {
	for _, outer := range sortedKeysOf(o.Routes) {
		for _, e := range o.Routes[outer].Entries {
			if e.Route == name {
				return outer
			}
		}
	}
	return ""
}

func hasKey[V any](m map[string]V, k string) bool {
	_, ok := m[k]
	return ok
}

// modelsInUse checks every route's graph and returns the models the
// selected route flattens to, in order (none without a route).
func modelsInUse(o *Options) ([]string, error) {
	for _, name := range sortedKeysOf(o.Routes) {
		flat, err := expandRoute(name, o, nil)
		if err != nil {
			return nil, err
		}
		if ma := o.Routes[name].MaxAttempts; ma > len(flat) {
			return nil, invalid("/options/routes"+pointer(name)+"/max_attempts", "max_attempts %d exceeds the %d flattened entries", ma, len(flat))
		}
	}
	if o.ModelRoute == "" {
		return nil, nil
	}
	if !hasKey(o.Routes, o.ModelRoute) {
		return nil, invalid("/options/model_route", "no route named %q", o.ModelRoute)
	}
	return expandRoute(o.ModelRoute, o, nil)
}

// RouteModels returns the models route flattens to, in order: the
// entries a route model tries. The deployment's load already refused
// routes that cannot be flattened.
func (o *Options) RouteModels(route string) ([]string, error) {
	return expandRoute(route, o, nil)
}

// expandRoute flattens route name into model names: no cycle, no route
// entered twice from one route, no model twice, at most 16 levels and 32
// models.
func expandRoute(name string, o *Options, chain []string) ([]string, error) {
	ptr := "/options/routes" + pointer(name)
	if slices.Contains(chain, name) {
		return nil, &Error{Code: CodeInvalidValue, Option: ptr, Chain: append(chain, name), Message: "routes refer to each other in a cycle"}
	}
	if len(chain) >= 16 {
		return nil, &Error{Code: CodeLimit, Option: ptr, Message: "routes nest deeper than 16 levels"}
	}
	r, ok := o.Routes[name]
	if !ok {
		return nil, invalid(ptr, "no route named %q", name)
	}
	if len(r.Entries) == 0 {
		return nil, invalid(ptr+"/entries", "routes need 1..32 entries")
	}
	var out []string
	seenRoutes := map[string]bool{}
	for i, e := range r.Entries {
		eptr := ptr + "/entries/" + strconv.Itoa(i)
		if e.Model != "" {
			if !hasKey(o.Models, e.Model) {
				return nil, invalid(eptr, "no model named %q", e.Model)
			}
			out = append(out, e.Model)
			continue
		}
		if seenRoutes[e.Route] {
			return nil, invalid(eptr, "route %q is repeated", e.Route)
		}
		seenRoutes[e.Route] = true
		flat, err := expandRoute(e.Route, o, append(chain, name))
		if err != nil {
			return nil, err
		}
		out = append(out, flat...)
	}
	for i, m := range out {
		if slices.Contains(out[:i], m) {
			return nil, invalid(ptr+"/entries", "model %q appears twice after expansion", m)
		}
	}
	if len(out) > 32 {
		return nil, &Error{Code: CodeLimit, Option: ptr + "/entries", Message: "more than 32 entries after expansion"}
	}
	return out, nil
}

func sortedKeysOf[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
