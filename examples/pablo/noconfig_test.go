package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// doctorIn runs `pablo doctor args...` in the invocation directory wd with
// environment env.
func doctorIn(t *testing.T, wd string, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	h := &host{stdout: &out, stderr: &errb, lookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }, workDir: wd, configDir: filepath.Join(wd, "no-user-config")}
	code := run(context.Background(), append([]string{"doctor"}, args...), h)
	return code, out.String(), errb.String()
}

// TestNoConfigModeChoosesProviderModelAndWorkspace: without --config the
// flags choose the provider, its model and the workspace, and the key
// credential of that provider is the one the run uses.
func TestNoConfigModeChoosesProviderModelAndWorkspace(t *testing.T) {
	ws := t.TempDir()
	for _, c := range []struct {
		provider, model, wantProvider, wantCred string
	}{
		{"anthropic", "claude-sonnet-4-5", "anthropic", "anthropic"},
		{"openai", "gpt-5", "openai", "openai"},
		{"gemini", "gemini-2.5-flash", "gemini", "gemini"},
		{"openrouter", "", "openrouter", "openrouter"},
		{"vercel", "", "vercel", "gateway"},
		{"ollama", "llama3.1:8b", "openai_compatible", ""},
	} {
		t.Run(c.provider, func(t *testing.T) {
			args := []string{"--provider", c.provider, "--workspace", ws}
			if c.model != "" {
				args = append(args, "--model", c.model)
			}
			d, err := loadRunArgs(t, t.TempDir(), nil, args...)
			if err != nil {
				t.Fatal(err)
			}
			if got := resolvedOption(t, d, "options.model.provider"); got != c.wantProvider {
				t.Fatalf("provider %v, want %s", got, c.wantProvider)
			}
			cred := fmtAny(resolvedOption(t, d, "options.model.credential"))
			if declared := resolvedOption(t, d, "credentials."+cred) != nil; c.wantCred == "" && declared || c.wantCred != "" && (cred != c.wantCred || !declared) {
				t.Fatalf("credential %q (declared %v), want %q", cred, declared, c.wantCred)
			}
			if c.model != "" && resolvedOption(t, d, "options.model.id") != c.model {
				t.Fatalf("model %v", resolvedOption(t, d, "options.model.id"))
			}
			if got, _ := d.Workspace(); got != ws {
				t.Fatalf("workspace %s, want %s", got, ws)
			}
			if c.provider == "ollama" && resolvedOption(t, d, "options.model.endpoint") != ollamaEndpoint {
				t.Fatalf("ollama endpoint %v", resolvedOption(t, d, "options.model.endpoint"))
			}
		})
	}
}

func fmtAny(v any) string {
	s, _ := v.(string)
	return s
}

// TestNoConfigModeRefusesWhatItCannotRun: a provider whose endpoint only
// a deployment can name, a native provider without --model, a workspace
// that is no directory, a missing --env-file and --bind workspace are
// each a usage error that says what to give instead.
func TestNoConfigModeRefusesWhatItCannotRun(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--provider", "openai_compatible"}, "needs a deployment that names its endpoint"},
		{[]string{"--provider", "open_responses"}, "pablo init --provider open_responses"},
		{[]string{"--provider", "anthropic"}, "--provider anthropic needs --model ID (for example claude-sonnet-4-5)"},
		{[]string{"--provider", "ollama"}, "--provider ollama needs --model ID"},
		{[]string{"--workspace", "/nonexistent/dir"}, "--workspace /nonexistent/dir is not an existing directory"},
		{[]string{"--env-file", "/nonexistent/.env"}, "--env-file /nonexistent/.env is not an existing file"},
		{[]string{"--bind", "workspace=/tmp"}, "use --workspace DIR"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			_, err := loadRunArgs(t, t.TempDir(), nil, c.args...)
			wantUsage(t, err, c.want)
		})
	}
}

// TestNoConfigModeReadsTheKeyFromEnvironmentThenDotEnv: the provider key
// is read from the environment, else from .env in the invocation
// directory, else from --env-file; when none has it, doctor names the
// variable and the file it looked in.
func TestNoConfigModeReadsTheKeyFromEnvironmentThenDotEnv(t *testing.T) {
	args := []string{"--provider", "anthropic", "--model", "claude-sonnet-4-5"}
	t.Run("environment", func(t *testing.T) {
		code, stdout, stderr := doctorIn(t, t.TempDir(), map[string]string{"ANTHROPIC_API_KEY": "sk-ant-test"}, args...)
		if code != 0 {
			t.Fatalf("exit %d: %s %s", code, stdout, stderr)
		}
	})
	t.Run(".env", func(t *testing.T) {
		wd := t.TempDir()
		os.WriteFile(filepath.Join(wd, ".env"), []byte("ANTHROPIC_API_KEY=sk-ant-test\n"), 0o600)
		code, stdout, stderr := doctorIn(t, wd, nil, args...)
		if code != 0 {
			t.Fatalf("exit %d: %s %s", code, stdout, stderr)
		}
	})
	t.Run("--env-file", func(t *testing.T) {
		env := filepath.Join(t.TempDir(), "keys.env")
		os.WriteFile(env, []byte("ANTHROPIC_API_KEY=sk-ant-test\n"), 0o600)
		code, stdout, stderr := doctorIn(t, t.TempDir(), nil, append(args, "--env-file", env)...)
		if code != 0 {
			t.Fatalf("exit %d: %s %s", code, stdout, stderr)
		}
	})
	t.Run("missing", func(t *testing.T) {
		code, stdout, stderr := doctorIn(t, t.TempDir(), nil, args...)
		if code != 3 || !strings.Contains(stdout, "ANTHROPIC_API_KEY") {
			t.Fatalf("exit %d (want 3, naming ANTHROPIC_API_KEY): %s %s", code, stdout, stderr)
		}
	})
}

// TestDefaultUserConfigAppliesWithoutConfigOnly: no-config mode reads
// $XDG_CONFIG_HOME/pablo/config.toml when present; --user-config names
// another; a run with --config reads the default location never.
func TestDefaultUserConfigAppliesWithoutConfigOnly(t *testing.T) {
	xdg := t.TempDir()
	os.MkdirAll(filepath.Join(xdg, "pablo"), 0o700)
	os.WriteFile(filepath.Join(xdg, "pablo", "config.toml"), []byte("schema_version = 1\n[options.limits]\nmax_model_calls = 4\n"), 0o600)
	env := map[string]string{"XDG_CONFIG_HOME": xdg}
	d, err := loadRunArgs(t, t.TempDir(), env, "--workspace", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if got := resolvedOption(t, d, "options.limits.max_model_calls"); got != float64(4) {
		t.Fatalf("the default user config did not apply: max_model_calls %v", got)
	}
	d, err = loadRunArgs(t, t.TempDir(), env, deploymentIn(t, "schema_version = 1\n")...)
	if err != nil {
		t.Fatal(err)
	}
	if got := resolvedOption(t, d, "options.limits.max_model_calls"); got == float64(4) {
		t.Fatal("with --config the default user config location must not be read")
	}
	other := filepath.Join(t.TempDir(), "prefs.toml")
	os.WriteFile(other, []byte("schema_version = 1\n[options.limits]\nmax_model_calls = 7\n"), 0o600)
	d, err = loadRunArgs(t, t.TempDir(), env, append(deploymentIn(t, "schema_version = 1\n"), "--user-config", other)...)
	if err != nil {
		t.Fatal(err)
	}
	if got := resolvedOption(t, d, "options.limits.max_model_calls"); got != float64(7) {
		t.Fatalf("--user-config did not apply: max_model_calls %v", got)
	}
}

// TestWorkspaceConfigFlagAppliesAboveUserAndIsRefusedUnderLock: the
// workspace file wins over the user file and loses to the deployment; a
// locked deployment refuses either flag.
func TestWorkspaceConfigFlagAppliesAboveUserAndIsRefusedUnderLock(t *testing.T) {
	dir := t.TempDir()
	user, ws := filepath.Join(dir, "user.toml"), filepath.Join(dir, "ws.toml")
	os.WriteFile(user, []byte("schema_version = 1\n[options.limits]\nmax_model_calls = 5\nmax_tool_calls = 5\n"), 0o600)
	os.WriteFile(ws, []byte("schema_version = 1\n[options.limits]\nmax_model_calls = 6\n"), 0o600)
	d, err := loadRunArgs(t, t.TempDir(), nil, append(deploymentIn(t, "schema_version = 1\n"), "--user-config", user, "--workspace-config", ws)...)
	if err != nil {
		t.Fatal(err)
	}
	if mc, tc := resolvedOption(t, d, "options.limits.max_model_calls"), resolvedOption(t, d, "options.limits.max_tool_calls"); mc != float64(6) || tc != float64(5) {
		t.Fatalf("model calls %v (want the workspace's 6), tool calls %v (want the user's 5)", mc, tc)
	}
	for _, flag := range []string{"--user-config", "--workspace-config"} {
		_, err := loadRunArgs(t, t.TempDir(), nil, append(deploymentIn(t, lockedBody), flag, user)...)
		wantForbidden(t, err)
	}
}
