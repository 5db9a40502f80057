package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// No-config mode: `pablo run "TASK"` without --config runs under a
// deployment the CLI writes from its flags, as the reference's legacy
// mode does: the workspace is --workspace (default: the current
// directory), the model is --provider and --model, and each provider's
// key is read from the environment and then from --env-file (default:
// .env in the current directory). The written deployment is an ordinary
// one, so everything a deployment file can do is checked the same way;
// `pablo init` writes a commented one to start from.

// providerKey is one provider's credential in no-config mode.
type providerKey struct {
	credential, consumer string
	// env are the variables tried in order, in the environment first
	// and then in the dotenv file.
	env []string
}

// noConfigKeys are the keys no-config mode looks for, one per provider.
var noConfigKeys = map[string]providerKey{
	"vercel":     {"gateway", "provider.vercel", []string{"AI_GATEWAY_API_KEY", "VERCEL_AI_GATEWAY"}},
	"openrouter": {"openrouter", "provider.openrouter", []string{"OPENROUTER_API_KEY"}},
	"anthropic":  {"anthropic", "provider.anthropic", []string{"ANTHROPIC_API_KEY"}},
	"openai":     {"openai", "provider.openai", []string{"OPENAI_API_KEY"}},
	"gemini":     {"gemini", "provider.gemini", []string{"GEMINI_API_KEY"}},
}

// noConfigProviders are --provider's values without --config.
var noConfigProviders = []string{"vercel", "openrouter", "anthropic", "openai", "gemini", "ollama"}

// ollamaEndpoint is where a local Ollama serves Chat Completions.
const ollamaEndpoint = "http://localhost:11434/v1/chat/completions"

// noConfigDeployment is the deployment no-config mode runs: the model
// the flags choose (none written: the user layer's, else the default)
// and every provider's key sources, the file named by the binding "env".
func noConfigDeployment(provider, model, envName string) string {
	var b strings.Builder
	b.WriteString("# Written by pablo run without --config (no-config mode).\nschema_version = 1\n")
	if provider != "" || model != "" {
		b.WriteString("\n[options.model]\n")
		switch provider {
		case "":
		case "ollama":
			fmt.Fprintf(&b, "provider = \"openai_compatible\"\nendpoint = %q\n", ollamaEndpoint)
		default:
			fmt.Fprintf(&b, "provider = %q\ncredential = %q\n", provider, noConfigKeys[provider].credential)
		}
		if model != "" {
			fmt.Fprintf(&b, "id = %q\n", model)
		}
	}
	for _, name := range []string{"vercel", "openrouter", "anthropic", "openai", "gemini"} {
		if name == "vercel" && provider == "ollama" {
			// The top model's credential defaults to "gateway": a local
			// server's profile declares none, so none is declared.
			continue
		}
		k := noConfigKeys[name]
		fmt.Fprintf(&b, "\n[credentials.%s]\nconsumer = %q\nsources = [\n", k.credential, k.consumer)
		for _, env := range k.env {
			fmt.Fprintf(&b, "  { kind = \"environment\", name = %q },\n", env)
		}
		for _, env := range k.env {
			fmt.Fprintf(&b, "  { kind = \"file\", path = { base = \"binding\", name = \"env\", path = %q }, encoding = \"dotenv\", key = %q },\n", envName, env)
		}
		b.WriteString("]\n")
	}
	return b.String()
}

// defaultUserConfig is the user configuration file no-config mode reads
// when it exists: $XDG_CONFIG_HOME/pablo/config.toml, else
// $HOME/.config/pablo/config.toml ("" when neither variable is set).
func defaultUserConfig(h *host) string {
	if h.configDir != "" {
		return filepath.Join(h.configDir, "config.toml")
	}
	if d, ok := h.lookupEnv("XDG_CONFIG_HOME"); ok && filepath.IsAbs(d) {
		return filepath.Join(d, "pablo", "config.toml")
	}
	if d, ok := h.lookupEnv("HOME"); ok && filepath.IsAbs(d) {
		return filepath.Join(d, ".config", "pablo", "config.toml")
	}
	return ""
}

// noConfig prepares no-config mode on p: it writes the deployment to a
// private temporary directory and sets --config and the bindings
// (workspace, env). The returned function removes the directory.
func noConfig(p *parsed, h *host) (func(), error) {
	nothing := func() {}
	provider, model := p.one("provider"), p.one("model")
	switch {
	case provider == "open_responses" || provider == "openai_compatible":
		return nothing, usagef("--provider %s needs a deployment that names its endpoint: write one (pablo init --provider %s) and pass --config", provider, provider)
	case provider != "" && provider != "vercel" && provider != "openrouter" && model == "":
		return nothing, usagef("--provider %s needs --model ID (for example %s)", provider, exampleModel(provider))
	}
	if len(p.values["skill"]) > 0 {
		return nothing, usagef("--skill needs --config: a deployment names the Skills roots (options.skills.roots) it activates from")
	}
	for _, b := range p.values["bind"] {
		if name, _, _ := strings.Cut(b, "="); name == "workspace" || name == "env" {
			return nothing, usagef("--bind %s is not taken without --config: use --workspace DIR and --env-file FILE", name)
		}
	}
	ws := p.one("workspace")
	if ws == "" {
		ws = h.workDir
	}
	ws = anchorTo(ws, h.workDir)
	if st, err := os.Stat(ws); err != nil || !st.IsDir() {
		return nothing, usagef("--workspace %s is not an existing directory", p.one("workspace"))
	}
	envFile := filepath.Join(h.workDir, ".env")
	if f := p.one("env-file"); f != "" {
		envFile = anchorTo(f, h.workDir)
		if st, err := os.Stat(envFile); err != nil || !st.Mode().IsRegular() {
			return nothing, usagef("--env-file %s is not an existing file", f)
		}
	}
	if p.one("user-config") == "" {
		if u := defaultUserConfig(h); u != "" {
			if _, err := os.Stat(u); err == nil {
				p.values["user-config"] = []string{u}
			}
		}
	}
	dir, err := os.MkdirTemp("", "pablo-run-")
	if err != nil {
		return nothing, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	cfg := filepath.Join(dir, "deployment.toml")
	if err := os.WriteFile(cfg, []byte(noConfigDeployment(provider, model, filepath.Base(envFile))), 0o600); err != nil {
		cleanup()
		return nothing, err
	}
	p.values["config"] = []string{cfg}
	p.noConfig = true
	p.values["bind"] = append(p.values["bind"], "workspace="+ws, "env="+filepath.Dir(envFile))
	return cleanup, nil
}

// exampleModel is a model ID a provider's error can suggest.
func exampleModel(provider string) string {
	switch provider {
	case "anthropic":
		return "claude-sonnet-4-5"
	case "openai":
		return "gpt-5"
	case "gemini":
		return "gemini-2.5-flash"
	case "ollama":
		return "llama3.1:8b"
	}
	return "MODEL"
}
