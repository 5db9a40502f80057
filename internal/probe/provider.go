// Package probe holds the live checks of a resolved deployment that a host
// runs before a task (`pablo doctor`): the model profiles a run may use and
// the provider probe over the first of them, the sandbox check and the
// sandbox's boundary canaries. It reads the deployment's checked
// configuration (internal/config types) and answers in the public
// deployment package's types; the root's Deployment methods of the same
// names are thin calls into it.
package probe

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/deployment"
	"github.com/pabloagent/pablo/internal/config"
	"github.com/pabloagent/pablo/internal/providers"
	"github.com/pabloagent/pablo/model"
)

// ModelProfiles lists the model profiles a run of c may use, in route
// order: the selected model, or every entry of the selected route a run
// can select (one whose model lacks what the route requires is left out).
func ModelProfiles(c *config.Deployment) []deployment.ModelProfile {
	o := &c.Options
	declared := c.Credentials()
	profile := func(ptr, name string) deployment.ModelProfile {
		m := o.Model
		if name != "" {
			m = o.Models[name]
		}
		consumer, endpoint, _ := m.Target()
		_, ok := declared[m.Credential]
		return deployment.ModelProfile{Option: ptr, Provider: m.Provider, Model: m.ID, Credential: m.Credential,
			Consumer: consumer, Endpoint: endpoint, Keyless: !ok && m.Provider == "openai_compatible", Name: name}
	}
	if o.ModelRoute == "" {
		return []deployment.ModelProfile{profile("/options/model", "")}
	}
	tools := len(c.NativeTools()) > 0 || len(o.MCP.Servers) > 0
	entries, _ := o.RouteEntries(o.ModelRoute, tools) // checked when the deployment loaded
	out := make([]deployment.ModelProfile, 0, len(entries))
	for _, e := range entries {
		if e.Selectable() {
			out = append(out, profile("/options/models/"+e.Model, e.Model))
		}
	}
	return out
}

// errProbeStreamOpened stops a probe at its first text: the body is not
// evaluated.
var errProbeStreamOpened = errors.New("the stream opened")

// The fixed probe request.
const (
	probeInstructions = "This is a connectivity check. Reply with OK."
	probeInput        = "OK?"
)

// Provider sends one fixed short request (no tools, a small output
// allowance) through the first model a run would use, with its credential
// resolved for exactly its consumer and endpoint, and reports what came
// back. A 2xx event stream passes; its body is not evaluated. The caller
// bounds the probe with ctx. It is `pablo doctor --probe provider`.
func Provider(ctx context.Context, c *config.Deployment, opts deployment.ProviderProbeOptions, fixture func(endpoint string) (model.Model, error)) deployment.ProviderProbe {
	profiles := ModelProfiles(c)
	if len(profiles) == 0 {
		return deployment.ProviderProbe{Code: "invalid_configuration", Detail: "the selected route has no model"}
	}
	m := profiles[0]
	if m.Consumer == "" && opts.Fixture == "" {
		return deployment.ProviderProbe{Detail: fmt.Sprintf("provider %q makes no request; nothing to probe", m.Provider)}
	}
	maxTokens := opts.MaxOutputTokens
	if maxTokens <= 0 {
		maxTokens = 16
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var (
		probed interface {
			Generate(context.Context, *model.Request, func(string) error) (*model.Response, error)
		}
		err error
	)
	target := fmt.Sprintf("%s/%s at %s", m.Provider, m.Model, m.Endpoint)
	if opts.Fixture != "" {
		target = fmt.Sprintf("%s/%s at fixture %s", m.Provider, m.Model, opts.Fixture)
		probed, err = fixture(opts.Fixture)
	} else {
		probed, err = providerModel(ctx, c, m, opts.LookupEnv, maxTokens)
	}
	if err != nil {
		if errors.Is(err, authority.ErrCredential) {
			return deployment.ProviderProbe{Code: "credential_unavailable", Detail: err.Error()}
		}
		return deployment.ProviderProbe{Code: "invalid_configuration", Detail: err.Error()}
	}
	stop := func(string) error { return errProbeStreamOpened }
	_, err = probed.Generate(ctx, &model.Request{Instructions: probeInstructions, MaxOutputTokens: maxTokens,
		Messages: []model.Message{{Role: model.RoleUser, Content: probeInput}}}, stop)
	code, detail := classifyProbe(ctx, err)
	if code != "" && parent.Err() != nil {
		code, detail = "interrupted", "the probe was interrupted"
	}
	return deployment.ProviderProbe{Target: target, Code: code, Detail: detail}
}

// providerModel builds the provider adapter of one profile with its
// credential resolved for exactly its consumer and endpoint.
func providerModel(ctx context.Context, c *config.Deployment, m deployment.ModelProfile, lookupEnv func(string) (string, bool), maxTokens int64) (providers.Model, error) {
	opts := c.Options.Model
	if m.Name != "" {
		opts = c.Options.Models[m.Name]
	}
	secret := ""
	if !m.Keyless {
		r, err := c.Resolver(authority.ResolverOptions{LookupEnv: lookupEnv})
		if err != nil {
			return nil, err
		}
		s, err := r.Resolve(ctx, m.Credential, m.Consumer, m.Endpoint)
		if err != nil {
			return nil, err
		}
		secret = s.Reveal()
	}
	client := providers.NewClient(providers.ClientOptions{})
	switch m.Provider {
	case "open_responses", "openai":
		return providers.NewResponses(client, providers.ResponsesOptions{Provider: providers.Provider(m.Provider), Endpoint: m.Endpoint, Model: m.Model, Secret: secret,
			AuthHeader: opts.AuthHeader, AuthScheme: opts.AuthScheme, MaxOutputTokens: maxTokens})
	case "anthropic":
		return providers.NewAnthropic(client, providers.AnthropicOptions{Endpoint: m.Endpoint, Model: m.Model, Secret: secret, MaxOutputTokens: maxTokens})
	case "gemini":
		return providers.NewGemini(client, providers.GeminiOptions{Endpoint: m.Endpoint, Model: m.Model, Secret: secret, MaxOutputTokens: maxTokens})
	}
	return providers.NewChat(client, providers.ChatOptions{Provider: providers.Provider(m.Provider), Endpoint: m.Endpoint, Model: m.Model,
		Secret: secret, AuthHeader: opts.AuthHeader, AuthScheme: opts.AuthScheme, MaxOutputTokens: maxTokens})
}

// classifyProbe maps a probe's result to a reason code and a detail
// (provider errors never hold a credential or a body).
func classifyProbe(ctx context.Context, err error) (string, string) {
	if err == nil || errors.Is(err, errProbeStreamOpened) {
		return "", "2xx event stream"
	}
	var pe *providers.Error
	if !errors.As(err, &pe) {
		if ctx.Err() != nil {
			return "provider_transport", "no answer within the probe deadline"
		}
		return "provider_transport", err.Error()
	}
	if errors.Is(pe.Err, errProbeStreamOpened) {
		return "", "2xx event stream"
	}
	switch {
	case pe.Code == providers.CodeRejected && (pe.Status == 401 || pe.Status == 403):
		return "provider_auth_rejected", pe.Error()
	case pe.Code == providers.CodeRejected && (pe.Status == 400 || pe.Status == 404 || pe.Status == 422):
		return "provider_request_unsupported", pe.Error()
	case pe.Code == providers.CodeContextTooLarge:
		return "provider_request_unsupported", pe.Error()
	case (pe.Code == providers.CodeMalformed || pe.Code == providers.CodeUnsupported) && pe.Status == 0:
		// A 2xx event stream opened; the reference does not evaluate the
		// body, so what it held is reported, not failed.
		return "", "2xx event stream (its body is not evaluated: " + pe.Reason + ")"
	case pe.Code == providers.CodeRejected:
		return "provider_rejected", pe.Error()
	case pe.Code == providers.CodeTransport:
		return "provider_transport", pe.Error()
	}
	return "provider_response", pe.Error()
}
