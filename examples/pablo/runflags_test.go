package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/deployment"
)

// The run flags of REFERENCE §2: each is parsed, validated, becomes its
// typed override, and passes the lock checks. loadRunArgs is the path
// `pablo run` takes from the command line to the resolved deployment.

// loadRunArgs parses args as `pablo run`'s and loads the deployment the
// run would use, in the invocation directory wd with environment env.
func loadRunArgs(t *testing.T, wd string, env map[string]string, args ...string) (*pablo.Deployment, error) {
	t.Helper()
	p, err := parseArgs(append(args, "TASK"), "run")
	if err != nil {
		return nil, err
	}
	ov, err := runOverrides(p)
	if err != nil {
		return nil, err
	}
	h := &host{lookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }, workDir: wd}
	d, cleanup, err := loadRun(context.Background(), p, h, ov)
	t.Cleanup(cleanup)
	return d, err
}

// resolvedOption reads a dotted path of the resolved document.
func resolvedOption(t *testing.T, d *pablo.Deployment, dotted string) any {
	t.Helper()
	var tree any
	if err := json.Unmarshal(d.CanonicalJSON(), &tree); err != nil {
		t.Fatal(err)
	}
	for _, part := range strings.Split(dotted, ".") {
		m, _ := tree.(map[string]any)
		tree = m[part]
	}
	return tree
}

// deploymentIn writes a deployment body and returns the flags that load
// it with a workspace binding.
func deploymentIn(t *testing.T, body string) []string {
	t.Helper()
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "work"), 0o700)
	cfg := filepath.Join(dir, "deployment.toml")
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"--config", cfg, "--bind", "workspace=" + filepath.Join(dir, "work")}
}

const (
	unlockedBody = "schema_version = 1\n[options.model]\nprovider = \"openai\"\nid = \"gpt-5\"\ncredential = \"openai\"\n[credentials.openai]\nconsumer = \"provider.openai\"\nsources = [{ kind = \"environment\", name = \"OPENAI_API_KEY\" }]\n[options.limits]\nmax_cost_microusd = \"9000\"\n"
	lockedBody   = unlockedBody + "[deployment]\nlocked = true\n"
)

// wantUsage fails unless err is an invalid command line whose message
// holds want.
func wantUsage(t *testing.T, err error, want string) {
	t.Helper()
	var ue *usageError
	if !errors.As(err, &ue) || !strings.Contains(ue.msg, want) {
		t.Fatalf("want a usage error saying %q, got %v", want, err)
	}
}

// wantForbidden fails unless err is config_override_forbidden.
func wantForbidden(t *testing.T, err error) {
	t.Helper()
	var ce *deployment.Error
	if !errors.As(err, &ce) || ce.Code != deployment.CodeOverrideForbidden {
		t.Fatalf("want config_override_forbidden, got %v", err)
	}
}

// TestRunFlagsBecomeTypedOverrides: each flag's value lands on its
// option, unlocked.
func TestRunFlagsBecomeTypedOverrides(t *testing.T) {
	schema := filepath.Join(t.TempDir(), "answer.json")
	os.WriteFile(schema, []byte(`{"type":"object","properties":{"paid":{"type":"boolean"}},"required":["paid"]}`), 0o600)
	for _, c := range []struct {
		flags  []string
		option string
		want   string
	}{
		{[]string{"--max-cost-microusd", "1200"}, "options.limits.max_cost_microusd", `"1200"`},
		{[]string{"--max-total-tokens", "5000"}, "options.limits.max_total_tokens", `"5000"`},
		{[]string{"--reasoning-effort", "high"}, "options.model.reasoning", `"high"`},
		{[]string{"--reasoning-budget-tokens", "2048"}, "options.model.reasoning", `{"budget_tokens":2048}`},
		{[]string{"--prompt-caching", "auto"}, "options.model.prompt_caching", `"auto"`},
		{[]string{"--model", "gpt-5-mini"}, "options.model.id", `"gpt-5-mini"`},
		{[]string{"--no-shell"}, "options.shell.enabled", `false`},
		{[]string{"--max-model-calls", "2"}, "options.limits.max_model_calls", `2`},
		{[]string{"--max-tool-calls", "0"}, "options.limits.max_tool_calls", `0`},
		{[]string{"--timeout", "30"}, "options.limits.max_run_duration_ms", `30000`},
		{[]string{"--tool-timeout", "7"}, "options.limits.max_tool_duration_ms", `7000`},
		{[]string{"--no-filesystem"}, "options.filesystem.enabled", `false`},
		{[]string{"--allow-write"}, "options.filesystem.write", `true`},
		{[]string{"--trace", "t.jsonl", "--capture-content"}, "options.trace.capture_content", `true`},
	} {
		t.Run(strings.Join(c.flags, " "), func(t *testing.T) {
			d, err := loadRunArgs(t, t.TempDir(), nil, append(deploymentIn(t, unlockedBody), c.flags...)...)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(resolvedOption(t, d, c.option))
			if string(got) != c.want {
				t.Fatalf("%s = %s, want %s", c.option, got, c.want)
			}
		})
	}
	t.Run("--provider openrouter", func(t *testing.T) {
		d, err := loadRunArgs(t, t.TempDir(), nil, append(deploymentIn(t, "schema_version = 1\n"), "--provider", "openrouter")...)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(resolvedOption(t, d, "options.model.provider")); got != "openrouter" {
			t.Fatalf("model.provider = %s", got)
		}
	})
	t.Run("--output-schema", func(t *testing.T) {
		d, err := loadRunArgs(t, t.TempDir(), nil, append(deploymentIn(t, unlockedBody), "--output-schema", schema)...)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(resolvedOption(t, d, "options.output.schema")); !strings.Contains(got, "paid") {
			t.Fatalf("output.schema = %s", got)
		}
	})
}

// TestRunFlagsRefuseBadValues: each flag's range, with a message that
// names the flag and what it takes (exit 2 before anything loads).
func TestRunFlagsRefuseBadValues(t *testing.T) {
	notJSON := filepath.Join(t.TempDir(), "schema.json")
	os.WriteFile(notJSON, []byte(`not json`), 0o600)
	for _, c := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--max-cost-microusd", "-1"}, "--max-cost-microusd takes a decimal integer"},
		{[]string{"--max-cost-microusd", "1.5"}, "--max-cost-microusd takes a decimal integer"},
		{[]string{"--max-total-tokens", "lots"}, "--max-total-tokens takes a decimal integer"},
		{[]string{"--reasoning-effort", "extreme"}, "--reasoning-effort takes one of provider_default, none"},
		{[]string{"--reasoning-budget-tokens", "0"}, "--reasoning-budget-tokens takes 1..4294967295"},
		{[]string{"--reasoning-budget-tokens", "4294967296"}, "--reasoning-budget-tokens takes 1..4294967295"},
		{[]string{"--reasoning-effort", "low", "--reasoning-budget-tokens", "10"}, "exclude each other"},
		{[]string{"--prompt-caching", "always"}, "--prompt-caching takes provider_default or auto"},
		{[]string{"--provider", "bedrock"}, "--provider takes one of vercel"},
		{[]string{"--model", "gpt 5"}, "--model takes 1..256 bytes without whitespace"},
		{[]string{"--model", strings.Repeat("m", 257)}, "--model takes 1..256 bytes"},
		{[]string{"--output-schema", notJSON}, "is not JSON"},
		{[]string{"--output-schema", "/nonexistent/schema.json"}, "--output-schema: cannot open"},
		{[]string{"--provider", "ollama"}, "no-config shorthand"},
		{[]string{"--timeout", "0"}, "--timeout takes 1..86400 seconds"},
		{[]string{"--timeout", "86401"}, "--timeout takes 1..86400 seconds"},
		{[]string{"--tool-timeout", "x"}, "--tool-timeout takes 1..86400 seconds"},
		{[]string{"--max-model-calls", "4294967296"}, "--max-model-calls takes 0..4294967295"},
		{[]string{"--max-tool-calls", "-1"}, "--max-tool-calls takes 0..4294967295"},
		{[]string{"--no-filesystem", "--allow-write"}, "--no-filesystem conflicts with --allow-write"},
		{[]string{"--model", "a", "--model", "b"}, "--model is repeated"},
		{[]string{"--no-shell", "--no-shell"}, "--no-shell is repeated"},
	} {
		t.Run(strings.Join(c.flags, " "), func(t *testing.T) {
			_, err := loadRunArgs(t, t.TempDir(), nil, append(deploymentIn(t, unlockedBody), c.flags...)...)
			wantUsage(t, err, c.want)
		})
	}
}

// TestLockedRunAcceptsNarrowingFlagsOnly: on a locked deployment a flag
// that turns a tool off or lowers a ceiling is accepted, and so are
// --json and --trace (where this process writes, no override); one that
// raises a ceiling, turns something on or changes the model, its
// reasoning, its caching or the answer schema is config_override_forbidden.
func TestLockedRunAcceptsNarrowingFlagsOnly(t *testing.T) {
	schema := filepath.Join(t.TempDir(), "answer.json")
	os.WriteFile(schema, []byte(`{"type":"object"}`), 0o600)
	for _, narrow := range [][]string{
		{"--no-shell"}, {"--no-filesystem"}, {"--max-model-calls", "3"}, {"--max-tool-calls", "0"},
		{"--max-cost-microusd", "100"}, {"--max-total-tokens", "1000"}, {"--timeout", "30"}, {"--tool-timeout", "5"},
		// Host outputs, not overrides (docs/differences.md).
		{"--json"}, {"--trace", "t.jsonl"},
	} {
		t.Run("narrow "+strings.Join(narrow, " "), func(t *testing.T) {
			if _, err := loadRunArgs(t, t.TempDir(), nil, append(deploymentIn(t, lockedBody), narrow...)...); err != nil {
				t.Fatalf("a narrowing flag is refused under lock: %v", err)
			}
		})
	}
	for _, widen := range [][]string{
		{"--allow-write"}, {"--max-cost-microusd", "9001"}, {"--provider", "anthropic"}, {"--model", "gpt-5-pro"},
		{"--reasoning-effort", "high"}, {"--reasoning-budget-tokens", "100"}, {"--prompt-caching", "auto"},
		{"--output-schema", schema}, {"--timeout", "86400"}, {"--trace", "t.jsonl", "--capture-content"},
	} {
		t.Run("widen "+strings.Join(widen, " "), func(t *testing.T) {
			_, err := loadRunArgs(t, t.TempDir(), nil, append(deploymentIn(t, lockedBody), widen...)...)
			wantForbidden(t, err)
		})
	}
}

// TestLockedPresetAcceptsNoShellAndALowerModelCallCeiling: the shipped
// production preset, which lists only input and the run deadline,
// accepts the narrowing flags the issue names.
func TestLockedPresetAcceptsNoShellAndALowerModelCallCeiling(t *testing.T) {
	code, stdout, stderr := cli(t, append([]string{"doctor", "--json", "--no-shell", "--max-model-calls", "1"}, productionIn(t, shipped)...)...)
	if strings.Contains(stdout+stderr, "config_override_forbidden") || strings.Contains(stdout, `"invalid_configuration"`) {
		t.Fatalf("exit %d: the locked preset refused a narrowing flag: %s %s", code, stdout, stderr)
	}
}

// TestPolicyFlagReplacesThePolicyUnlockedOnly: --policy replaces
// options.policy (an omitted dimension allows); under lock it is refused
// before its file is read (a path that does not exist gives the same
// refusal).
func TestPolicyFlagReplacesThePolicyUnlockedOnly(t *testing.T) {
	pol := filepath.Join(t.TempDir(), "policy.json")
	os.WriteFile(pol, []byte(`{"tools":{"default":"deny","allow":[{"id":"read-only","value":"fs.read"}]}}`), 0o600)
	body := unlockedBody + "[options.policy.executables]\ndefault = \"deny\"\n"
	d, err := loadRunArgs(t, t.TempDir(), nil, append(deploymentIn(t, body), "--policy", pol)...)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(resolvedOption(t, d, "options.policy.tools.default")); got != "deny" {
		t.Fatalf("policy.tools.default = %s", got)
	}
	if got := fmt.Sprint(resolvedOption(t, d, "options.policy.executables.default")); got != "allow" {
		t.Fatalf("an omitted dimension must allow: executables.default = %s", got)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{"tols":{}}`), 0o600)
	_, err = loadRunArgs(t, t.TempDir(), nil, append(deploymentIn(t, unlockedBody), "--policy", bad)...)
	wantUsage(t, err, `unknown dimension "tols"`)
	_, err = loadRunArgs(t, t.TempDir(), nil, append(deploymentIn(t, lockedBody), "--policy", "/nonexistent/policy.json")...)
	wantForbidden(t, err)
}

// TestWorkspaceFlagWithConfigIsTheWorkspaceBinding: with --config,
// --workspace DIR binds workspace; giving both is refused.
func TestWorkspaceFlagWithConfigIsTheWorkspaceBinding(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "d.toml")
	os.WriteFile(cfg, []byte(unlockedBody), 0o600)
	ws := t.TempDir()
	d, err := loadRunArgs(t, dir, nil, "--config", cfg, "--workspace", ws)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := d.Workspace(); got != ws {
		t.Fatalf("workspace %s, want %s", got, ws)
	}
	_, err = loadRunArgs(t, dir, nil, "--config", cfg, "--workspace", ws, "--bind", "workspace="+ws)
	wantUsage(t, err, "name the same binding")
}

// TestEnvFileWithConfigIsForbiddenAtCredentials: a deployment declares
// its credential sources; --env-file beside it is
// config_override_forbidden at /credentials, as the reference says.
func TestEnvFileWithConfigIsForbiddenAtCredentials(t *testing.T) {
	env := filepath.Join(t.TempDir(), ".env")
	os.WriteFile(env, []byte("OPENAI_API_KEY=x\n"), 0o600)
	_, err := loadRunArgs(t, t.TempDir(), nil, append(deploymentIn(t, unlockedBody), "--env-file", env)...)
	var ce *deployment.Error
	if !errors.As(err, &ce) || ce.Code != deployment.CodeOverrideForbidden || ce.Option != "/credentials" {
		t.Fatalf("want config_override_forbidden at /credentials, got %v", err)
	}
}

// TestSkillFlagReplacesSkillsActivate: --skill replaces skills.activate;
// more than 8, an empty or a 513-byte name, or no --config are usage
// errors; under lock it needs allowed_run_overrides to list
// skills.activate, and then takes any of the deployment's Skills.
func TestSkillFlagReplacesSkillsActivate(t *testing.T) {
	skills := "[options.skills]\nroots = { team = { base = \"source\", path = \"skills\" } }\nactivate = [\"team/other\"]\n"
	d, err := loadRunArgs(t, t.TempDir(), nil, append(deploymentIn(t, unlockedBody+skills), "--skill", "team/evidence-review", "--skill", "team/notes")...)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := json.Marshal(resolvedOption(t, d, "options.skills.activate")); string(got) != `["team/evidence-review","team/notes"]` {
		t.Fatalf("skills.activate = %s", got)
	}
	nine := []string{}
	for i := range 9 {
		nine = append(nine, "--skill", fmt.Sprintf("team/s%d", i))
	}
	for _, c := range []struct {
		flags []string
		want  string
	}{
		{nine, "--skill is given 9 times: at most 8"},
		{[]string{"--skill", ""}, "--skill takes ROOT/NAME or a unique short name of 1..512 bytes"},
		{[]string{"--skill", strings.Repeat("s", 513)}, "1..512 bytes"},
	} {
		_, err := loadRunArgs(t, t.TempDir(), nil, append(deploymentIn(t, unlockedBody+skills), c.flags...)...)
		wantUsage(t, err, c.want)
	}
	_, err = loadRunArgs(t, t.TempDir(), nil, "--workspace", t.TempDir(), "--skill", "team/notes")
	wantUsage(t, err, "--skill needs --config")

	_, err = loadRunArgs(t, t.TempDir(), nil, append(deploymentIn(t, lockedBody+skills), "--skill", "team/notes")...)
	wantForbidden(t, err)
	listed := strings.Replace(lockedBody, "locked = true\n", "locked = true\nallowed_run_overrides = [\"input\", \"skills.activate\"]\n", 1) + skills
	d, err = loadRunArgs(t, t.TempDir(), nil, append(deploymentIn(t, listed), "--skill", "team/notes")...)
	if err != nil {
		t.Fatalf("a listed skills.activate is refused under lock: %v", err)
	}
	if got, _ := json.Marshal(resolvedOption(t, d, "options.skills.activate")); string(got) != `["team/notes"]` {
		t.Fatalf("skills.activate under lock = %s", got)
	}
}

// TestLockedFlagForcesLockMode: --locked locks a deployment that does not
// lock itself: a narrowing flag is still accepted, a widening one is
// config_override_forbidden, and --policy is refused before its file is
// read.
func TestLockedFlagForcesLockMode(t *testing.T) {
	d, err := loadRunArgs(t, t.TempDir(), nil, append(deploymentIn(t, unlockedBody), "--locked", "--no-shell")...)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Locked() {
		t.Fatal("--locked did not lock the deployment")
	}
	for _, widen := range [][]string{{"--allow-write"}, {"--model", "gpt-5-pro"}, {"--policy", "/nonexistent/policy.json"}} {
		_, err := loadRunArgs(t, t.TempDir(), nil, append(append(deploymentIn(t, unlockedBody), "--locked"), widen...)...)
		wantForbidden(t, err)
	}
}

// TestProfileAndConfigRootFlags: --profile applies the named profile
// over the file's own; an unknown one is config_unknown_profile.
// --config-root bounds the imports: an import above the config file's
// directory is config_import_path until --config-root contains it.
func TestProfileAndConfigRootFlags(t *testing.T) {
	body := unlockedBody + "[profiles.small.options.limits]\nmax_model_calls = 2\n"
	d, err := loadRunArgs(t, t.TempDir(), nil, append(deploymentIn(t, body), "--profile", "small")...)
	if err != nil {
		t.Fatal(err)
	}
	if got := resolvedOption(t, d, "options.limits.max_model_calls"); got != float64(2) {
		t.Fatalf("--profile small: max_model_calls %v", got)
	}
	_, err = loadRunArgs(t, t.TempDir(), nil, append(deploymentIn(t, body), "--profile", "nope")...)
	var ce *deployment.Error
	if !errors.As(err, &ce) || ce.Code != deployment.CodeUnknownProfile {
		t.Fatalf("--profile nope: want config_unknown_profile, got %v", err)
	}

	root := t.TempDir()
	sub := filepath.Join(root, "team")
	os.MkdirAll(filepath.Join(root, "work"), 0o700)
	os.Mkdir(sub, 0o700)
	os.WriteFile(filepath.Join(root, "common.toml"), []byte("schema_version = 1\n[options.limits]\nmax_tool_calls = 3\n"), 0o600)
	cfg := filepath.Join(sub, "d.toml")
	os.WriteFile(cfg, []byte("schema_version = 1\nimports = [\"../common.toml\"]\n"), 0o600)
	bind := []string{"--config", cfg, "--bind", "workspace=" + filepath.Join(root, "work")}
	_, err = loadRunArgs(t, t.TempDir(), nil, bind...)
	if !errors.As(err, &ce) || ce.Code != deployment.CodeImportPath {
		t.Fatalf("an import above the config root: want config_import_path, got %v", err)
	}
	d, err = loadRunArgs(t, t.TempDir(), nil, append(bind, "--config-root", root)...)
	if err != nil {
		t.Fatal(err)
	}
	if got := resolvedOption(t, d, "options.limits.max_tool_calls"); got != float64(3) {
		t.Fatalf("--config-root: the import did not apply: max_tool_calls %v", got)
	}
}

// TestVersionDemoAndACPFlagRules: --version and version print the
// version; demo takes no deployment flag; acp refuses --workspace (each
// session's cwd is its workspace); tui refuses --json (it draws text).
func TestVersionDemoAndACPFlagRules(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"version"}} {
		if code, out, _ := cli(t, args...); code != 0 || out != "pablo "+Version+"\n" {
			t.Errorf("pablo %s: exit %d, %q", args[0], code, out)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"demo", "--config", "deployment.toml"}, "unknown flag --config"},
		{[]string{"demo", "--no-shell"}, "unknown flag --no-shell"},
		{[]string{"acp", "--stdio", "--workspace", t.TempDir(), "--config", "deployment.toml"}, "unknown flag --workspace"},
		{[]string{"tui", "--json"}, "unknown flag --json"},
	} {
		if code, out, errs := cli(t, c.args...); code != 2 || out != "" || !strings.Contains(errs, c.want) {
			t.Errorf("pablo %s: exit %d, stdout %q, stderr %q; want 2 and %q", strings.Join(c.args, " "), code, out, errs, c.want)
		}
	}
}
