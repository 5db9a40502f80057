package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"unicode"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/deployment"
)

// The run flags of REFERENCE §2 beyond the limits and tool switches:
// each is validated here and becomes a typed override, so it passes the
// same lock checks as any override (internal/config: under lock a switch
// may only turn off and a ceiling only go down, and nothing else changes
// unless allowed_run_overrides lists it).

// reasoningEfforts are --reasoning-effort's values.
var reasoningEfforts = []string{"provider_default", "none", "minimal", "low", "medium", "high", "xhigh", "max"}

// hostFileMax bounds --policy and --output-schema files (1 MiB).
const hostFileMax = 1 << 20

// extraRunFlags are the reference's run flags that select the model and
// its reasoning, the policy and the answer schema, and no-config mode's
// workspace and credential file (--max-cost-microusd and
// --prompt-caching are in runFlags).
func extraRunFlags() []flag {
	return []flag{
		{name: "workspace", arg: "DIR", help: "the workspace, an existing directory (default: the current directory without --config; with --config the same as --bind workspace=DIR)"},
		{name: "provider", arg: "NAME", help: "the model provider: vercel, openrouter, anthropic, openai, gemini, ollama (a local server at localhost:11434), or with --config also open_responses and openai_compatible (default: options.model.provider, else vercel)"},
		{name: "model", arg: "ID", help: "the model ID, 1..256 bytes without whitespace or control characters; conflicts with a selected options.model_route (default: options.model.id, else the provider's default)"},
		{name: "env-file", arg: "FILE", help: "without --config: the dotenv file the provider key is read from after the environment (default: .env in the current directory, when present); refused with --config"},
		{name: "policy", arg: "FILE", help: "replace options.policy with this JSON policy (at most 1 MiB; an omitted dimension allows); refused under lock before the file is read"},
		{name: "output-schema", arg: "FILE", help: "a Draft 2020-12 JSON Schema the final answer must satisfy, at most 1 MiB (default: output.schema)"},
		{name: "reasoning-effort", arg: "VALUE", help: "provider_default, none, minimal, low, medium, high, xhigh or max; not with --reasoning-budget-tokens (default: options.model.reasoning)"},
		{name: "reasoning-budget-tokens", arg: "N", help: "a reasoning token budget, 1..4294967295; not with --reasoning-effort (default: options.model.reasoning)"},
	}
}

// extraOverrides maps the flags of extraRunFlags to overrides and checks
// the ranges of --max-cost-microusd and --max-total-tokens. --policy,
// --workspace and --env-file are not overrides: loadDeploymentBound and
// no-config mode handle them.
func extraOverrides(p *parsed) ([]pablo.Override, error) {
	var out []pablo.Override
	if v := p.one("max-cost-microusd"); v != "" {
		if _, err := strconv.ParseUint(v, 10, 64); err != nil {
			return nil, usagef("--max-cost-microusd takes a decimal integer 0..18446744073709551615, got %q", v)
		}
	}
	if v := p.one("max-total-tokens"); v != "" {
		if _, err := strconv.ParseUint(v, 10, 64); err != nil {
			return nil, usagef("--max-total-tokens takes a decimal integer 0..18446744073709551615, got %q", v)
		}
	}
	effort, budget := p.one("reasoning-effort"), p.one("reasoning-budget-tokens")
	switch {
	case effort != "" && budget != "":
		return nil, usagef("--reasoning-effort and --reasoning-budget-tokens exclude each other: give one")
	case effort != "":
		if !contains(reasoningEfforts, effort) {
			return nil, usagef("--reasoning-effort takes one of %s, got %q", strings.Join(reasoningEfforts, ", "), effort)
		}
		out = append(out, pablo.Override{Target: "model.reasoning", Value: effort})
	case budget != "":
		n, err := strconv.ParseUint(budget, 10, 32)
		if err != nil || n == 0 {
			return nil, usagef("--reasoning-budget-tokens takes 1..4294967295, got %q", budget)
		}
		out = append(out, pablo.Override{Target: "model.reasoning", Value: map[string]any{"budget_tokens": int64(n)}})
	}
	if v := p.one("model"); v != "" {
		if err := checkModelID(v); err != nil {
			return nil, err
		}
	}
	if v := p.one("provider"); v != "" {
		if !contains(configProviders, v) && !contains(noConfigProviders, v) {
			return nil, usagef("--provider takes one of %s, got %q", strings.Join(allProviders(), ", "), v)
		}
	}
	return out, nil
}

// configProviders are --provider's values with --config: the
// deployment's own provider names (ollama is no-config mode's
// shorthand for an openai_compatible local server).
var configProviders = []string{"vercel", "openrouter", "open_responses", "openai_compatible", "anthropic", "openai", "gemini"}

func allProviders() []string {
	out := append([]string{}, configProviders...)
	return append(out, "ollama")
}

// modelOverrides are --provider and --model with --config.
func modelOverrides(p *parsed, h *host) ([]pablo.Override, error) {
	var out []pablo.Override
	if v := p.one("provider"); v != "" {
		if !contains(configProviders, v) {
			return nil, usagef("--provider %s is a no-config shorthand; with --config write [options.model] provider = \"openai_compatible\" and its endpoint", v)
		}
		out = append(out, pablo.Override{Target: "model.provider", Value: v})
	}
	if v := p.one("model"); v != "" {
		out = append(out, pablo.Override{Target: "model.id", Value: v})
	}
	if path := p.one("output-schema"); path != "" {
		raw, err := readHostFile(anchorTo(path, h.workDir), "--output-schema")
		if err != nil {
			return nil, err
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, usagef("--output-schema %s is not JSON: %v", path, err)
		}
		if _, ok := v.(map[string]any); !ok {
			return nil, usagef("--output-schema %s holds no JSON object: a schema is an object", path)
		}
		out = append(out, pablo.Override{Target: "output.schema", Value: string(raw)})
	}
	return out, nil
}

// checkModelID is --model's rule: 1..256 bytes, no whitespace or control
// characters.
func checkModelID(v string) error {
	if len(v) > 256 || strings.IndexFunc(v, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return usagef("--model takes 1..256 bytes without whitespace or control characters")
	}
	return nil
}

// anchorTo is a flag's path anchored to the invocation directory.
func anchorTo(path, dir string) string {
	if filepath.IsAbs(path) || dir == "" {
		return path
	}
	return filepath.Join(dir, path)
}

// readHostFile reads a file a flag names: a regular file (a FIFO or a
// device is refused at once, never waited on) of at most 1 MiB.
func readHostFile(path, flagName string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, usagef("%s: cannot open %s: %v", flagName, path, errors.Unwrap(err))
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return nil, usagef("%s: %s is not a regular file", flagName, path)
	}
	raw, err := io.ReadAll(io.LimitReader(f, hostFileMax+1))
	if err != nil {
		return nil, usagef("%s: cannot read %s", flagName, path)
	}
	if len(raw) > hostFileMax {
		return nil, usagef("%s: %s exceeds %d bytes", flagName, path, hostFileMax)
	}
	return raw, nil
}

// policyDimensions are options.policy's four dimensions.
var policyDimensions = []string{"tools", "executables", "read_roots", "write_roots"}

// policyOverride reads --policy: a JSON object with any of the four
// dimensions; an omitted one becomes {default = "allow", allow = [],
// deny = []}, so the file replaces the deployment's policy whole.
func policyOverride(path string, h *host) (pablo.Override, error) {
	raw, err := readHostFile(anchorTo(path, h.workDir), "--policy")
	if err != nil {
		return pablo.Override{}, err
	}
	var doc map[string]any
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	if err := dec.Decode(&doc); err != nil || doc == nil {
		return pablo.Override{}, usagef("--policy %s is not a JSON object: %v", path, err)
	}
	if dec.More() {
		return pablo.Override{}, usagef("--policy %s holds more than one JSON value", path)
	}
	for k := range doc {
		if !contains(policyDimensions, k) {
			return pablo.Override{}, usagef("--policy %s: unknown dimension %q (want %s)", path, k, strings.Join(policyDimensions, ", "))
		}
	}
	for _, dim := range policyDimensions {
		if _, ok := doc[dim]; !ok {
			doc[dim] = map[string]any{"default": "allow", "allow": []any{}, "deny": []any{}}
		}
	}
	return pablo.Override{Target: "policy", Value: doc}, nil
}

func contains(list []string, v string) bool {
	for _, e := range list {
		if e == v {
			return true
		}
	}
	return false
}

// loadRun loads a run's deployment: --config with its overrides, or
// no-config mode. --policy is read only once the deployment is known to
// be unlocked, so a locked deployment refuses it before the file is
// opened.
func loadRun(ctx context.Context, p *parsed, h *host, overrides []pablo.Override) (*pablo.Deployment, func(), error) {
	cleanup := func() {}
	if p.one("config") == "" {
		c, err := noConfig(p, h)
		if err != nil {
			return nil, cleanup, err
		}
		cleanup = c
	} else {
		if p.one("env-file") != "" {
			return nil, cleanup, &deployment.Error{Code: deployment.CodeOverrideForbidden, Option: "/credentials", Message: "--env-file is for runs without --config: a deployment declares its credential sources ([credentials.NAME] sources)"}
		}
		more, err := modelOverrides(p, h)
		if err != nil {
			return nil, cleanup, err
		}
		overrides = append(overrides, more...)
	}
	d, err := loadDeployment(ctx, p, h, overrides)
	if err != nil {
		return nil, cleanup, err
	}
	if path := p.one("policy"); path != "" {
		if d.Locked() {
			return nil, cleanup, &deployment.Error{Code: deployment.CodeOverrideForbidden, Option: "/options/policy", Message: "a locked deployment's policy is never replaced per run: --policy is refused before its file is read"}
		}
		o, err := policyOverride(path, h)
		if err != nil {
			return nil, cleanup, err
		}
		d, err = loadDeployment(ctx, p, h, append(overrides, o))
		if err != nil {
			return nil, cleanup, err
		}
	}
	return d, cleanup, nil
}
