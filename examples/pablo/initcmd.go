package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/template"
)

// initCommand implements `pablo init`: it writes a commented starter
// deployment for the provider the user chooses (its model, its key's
// environment variable, the workspace binding, the file tools, a shell
// command policy, limits and a commented MCP server), and never
// overwrites a file.
func initCommand(_ context.Context, args []string, h *host) error {
	p, err := parseArgs(args, "init")
	if err != nil {
		return err
	}
	if len(p.args) > 0 {
		return usagef("pablo init takes no arguments, got %q (the file is --output FILE)", p.args[0])
	}
	provider := p.one("provider")
	if provider == "" {
		provider = "vercel"
	}
	model := p.one("model")
	if model != "" {
		if err := checkModelID(model); err != nil {
			return err
		}
	}
	out := p.one("output")
	if out == "" {
		out = "deployment.toml"
	}
	body, err := starterDeployment(provider, model, filepath.Base(out))
	if err != nil {
		return err
	}
	path := anchorTo(out, h.workDir)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return usagef("%s exists: pablo init never overwrites a file (choose another with --output FILE)", out)
		}
		return usagef("cannot create %s: %v", out, errors.Unwrap(err))
	}
	if _, err := f.WriteString(body); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintf(h.stdout, "wrote %s\n", out)
	fmt.Fprintf(h.stdout, "  check it:   pablo config validate --config %s --bind workspace=.\n", out)
	fmt.Fprintf(h.stdout, "  run a task: pablo run \"TASK\" --config %s --bind workspace=.\n", out)
	if k, ok := initKeys[provider]; ok {
		fmt.Fprintf(h.stdout, "  it reads the key from the environment variable %s\n", k.env)
	}
	return nil
}

// initProviders are init's --provider values, in help's order.
var initProviders = []string{"vercel", "openrouter", "anthropic", "openai", "gemini", "ollama", "openai_compatible", "open_responses"}

// initKey is a provider's model, credential and key variable.
type initKey struct {
	model, credential, consumer, env string
}

// initKeys are the starters of the providers with a key; ollama needs none.
var initKeys = map[string]initKey{
	"vercel":            {"zai/glm-5.3-flash", "gateway", "provider.vercel", "AI_GATEWAY_API_KEY"},
	"openrouter":        {"z-ai/glm-5.3-flash", "openrouter", "provider.openrouter", "OPENROUTER_API_KEY"},
	"anthropic":         {"claude-sonnet-4-5", "anthropic", "provider.anthropic", "ANTHROPIC_API_KEY"},
	"openai":            {"gpt-5", "openai", "provider.openai", "OPENAI_API_KEY"},
	"gemini":            {"gemini-2.5-flash", "gemini", "provider.gemini", "GEMINI_API_KEY"},
	"openai_compatible": {"gpt-4.1-mini", "compatible", "provider.openai_compatible", "OPENAI_API_KEY"},
	"open_responses":    {"gpt-5", "responses", "provider.open_responses", "OPENAI_API_KEY"},
}

// starterDeployment is init's file for provider and model ("" for the
// provider's example model), named output in its comments.
func starterDeployment(provider, model, output string) (string, error) {
	if !contains(initProviders, provider) {
		return "", usagef("--provider takes one of %s, got %q", strings.Join(initProviders, ", "), provider)
	}
	data := struct {
		Provider, Written, Model, Credential, Consumer, Env, Endpoint, Extra, Output string
	}{Provider: provider, Written: provider, Output: output}
	if k, ok := initKeys[provider]; ok {
		data.Model, data.Credential, data.Consumer, data.Env = k.model, k.credential, k.consumer, k.env
	}
	switch provider {
	case "ollama":
		data.Written, data.Model, data.Endpoint = "openai_compatible", "llama3.1:8b", ollamaEndpoint
	case "openai_compatible":
		data.Endpoint = "https://api.openai.com/v1/chat/completions"
	case "open_responses":
		data.Endpoint = "https://api.openai.com/v1/responses"
		data.Extra = "capability_profile = \"open-responses-text-tools-v1\"\n"
	}
	if model != "" {
		data.Model = model
	}
	// Parsed here, not at package initialization: every pablo start
	// (an ACP server's idle memory) would pay for it otherwise.
	tmpl, err := template.New("starter").Parse(starterText)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	if err := tmpl.Execute(&b, data); err != nil {
		return "", err
	}
	return b.String(), nil
}

// starterText is init's template.
const starterText = `# A Pablo deployment, written by pablo init --provider {{.Provider}}.
#
# Check it (offline: no key read, nothing started):
#   pablo config validate --config {{.Output}} --bind workspace=.
# Run a task in the directory you bind as the workspace:
#   pablo run "Summarize README.md" --config {{.Output}} --bind workspace=.
# Every key, its type, default and range: docs/configuration.md
schema_version = 1

# The model. Its key is never written here: [credentials] below says where
# it is read from.
[options.model]
provider = "{{.Written}}"
id = "{{.Model}}"
{{- if .Endpoint}}
endpoint = "{{.Endpoint}}"
{{- end}}
{{- if .Credential}}
credential = "{{.Credential}}"
{{- end}}
{{.Extra}}
{{- if .Credential}}
[credentials.{{.Credential}}]
consumer = "{{.Consumer}}"
sources = [{ kind = "environment", name = "{{.Env}}" }]
{{else}}
# A local server on this host's loopback interface needs no key.
{{end}}
# The workspace: the directory given at run time with --bind workspace=DIR.
# Every file tool and shell command stays inside it.
[options.run]
workspace = { base = "binding", name = "workspace", path = "." }

# The file tools: fs.read, fs.list and fs.search; write = true adds fs.write
# and fs.edit (or pass --allow-write to one run).
[options.filesystem]
enabled = true
write = false

# shell.run: runs only what a rule allows, matched on the executable's
# absolute path and its leading arguments; the command runs in a bubblewrap
# sandbox where one is available. enabled = false removes the tool.
[options.shell]
enabled = true

[options.shell.commands]
default = "deny"
allow = [
  { id = "git-read", executable = "/usr/bin/git", args = ["log"], match = "prefix" },
  { id = "list", executable = "/usr/bin/ls", args = [], match = "prefix" },
]

# Ceilings of one task; a run may lower them (--max-model-calls N).
[options.limits]
max_model_calls = 50
max_tool_calls = 200

# An MCP server: remove the leading "# " of the lines below to start the
# reference filesystem server over stdio (it needs Node.js; command is an
# absolute path). Its tools are named mcp/files/TOOL.
# [options.mcp.servers.files]
# transport = "stdio"
# command = "/usr/bin/npx"
# args = ["-y", "@modelcontextprotocol/server-filesystem", "."]
# cwd = { base = "workspace", path = "." }
`

// initFlags are init's flags.
func initFlags() []flag {
	return []flag{
		{name: "provider", arg: "NAME", help: "the model provider: " + strings.Join(initProviders, ", ") + " (default: vercel)"},
		{name: "model", arg: "ID", help: "the model ID (default: an example model of the provider)"},
		{name: "output", arg: "FILE", help: "the file to write, never overwritten (default: deployment.toml)"},
	}
}
