package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// originals holds the original's deployment files, kept in the repository
// as compatibility fixtures (testdata/reference/README.md).
const originals = "../../testdata/reference"

// presets is the original's preset bundle: the goldens and the
// compatibility tests run on these exact bytes.
const presets = originals + "/presets"

// shipped is the directory of the presets Pablo ships.
const shipped = "../../presets"

// cli runs the CLI in-process and returns its exit code and output.
func cli(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	wd, _ := os.Getwd()
	code := run(context.Background(), args, &host{stdout: &out, stderr: &errb, lookupEnv: func(string) (string, bool) { return "", false }, workDir: wd})
	return code, out.String(), errb.String()
}

// production is the original's locked production preset, bound.
func production(t *testing.T) []string { return productionIn(t, presets) }

// productionIn is the production preset of the bundle in dir, bound.
func productionIn(t *testing.T, dir string) []string {
	return []string{"--config", filepath.Join(dir, "production.toml"), "--bind", "workspace=" + t.TempDir(), "--bind", "preset=" + dir}
}

// TestValidateFingerprintIsStable, on the original's production preset and
// on the one Pablo ships, which validate to the same fingerprint.
func TestValidateFingerprintIsStable(t *testing.T) {
	var valid []string
	for _, dir := range []string{presets, shipped} {
		args := productionIn(t, dir)
		code, out1, _ := cli(t, append([]string{"config", "validate"}, args...)...)
		if code != 0 || !strings.HasPrefix(out1, "valid sha256:") {
			t.Fatalf("%s: exit %d: %q", dir, code, out1)
		}
		_, out2, _ := cli(t, append([]string{"config", "validate"}, args...)...)
		if out1 != out2 {
			t.Fatalf("%s: a second run changed the fingerprint", dir)
		}
		code, rendered, _ := cli(t, append([]string{"config", "render"}, args...)...)
		if code != 0 {
			t.Fatalf("%s: render failed", dir)
		}
		p := filepath.Join(t.TempDir(), "rendered.toml")
		os.WriteFile(p, []byte(rendered), 0o600)
		_, out3, errs := cli(t, "config", "validate", "--config", p, "--bind", "workspace="+t.TempDir(), "--bind", "preset="+dir)
		if out3 != out1 {
			t.Fatalf("%s: render + reload changed the fingerprint: %q vs %q (%s)", dir, out3, out1, errs)
		}
		code, explain, _ := cli(t, append([]string{"config", "explain"}, args...)...)
		var env map[string]any
		if code != 0 || json.Unmarshal([]byte(explain), &env) != nil || !strings.HasPrefix(out1, "valid "+env["fingerprint"].(string)+"\n") {
			t.Fatalf("%s: explain: %d %.200s", dir, code, explain)
		}
		valid = append(valid, out1)
	}
	if valid[0] != valid[1] {
		t.Fatalf("the shipped production preset validates as %q, the original's as %q", valid[1], valid[0])
	}
}

// TestPolicyCheckProduction: the original's locked production preset and
// the one Pablo ships decide alike.
func TestPolicyCheckProduction(t *testing.T) {
	t.Run("original", func(t *testing.T) { policyCheckProduction(t, productionIn(t, presets)) })
	t.Run("shipped", func(t *testing.T) { policyCheckProduction(t, productionIn(t, shipped)) })
}

func policyCheckProduction(t *testing.T, args []string) {
	code, out, _ := cli(t, append([]string{"policy", "check", "--json", "mcp/evidence/read_evidence"}, args...)...)
	if code != 0 || !strings.Contains(out, `"rule_id":"production.evidence_read"`) || !strings.Contains(out, `"rule_id":"preset.evidence_read"`) {
		t.Fatalf("read_evidence: %d %s", code, out)
	}
	code, out, _ = cli(t, append([]string{"policy", "check", "--json", "mcp/evidence/delete_evidence"}, args...)...)
	if code != 1 || !strings.Contains(out, `"layer":"production.read_only"`) || !strings.Contains(out, `"allowed":false`) {
		t.Fatalf("delete_evidence: %d %s", code, out)
	}
	code, out, _ = cli(t, append([]string{"policy", "check", "--json", "mcp/ghost/read_evidence"}, args...)...)
	if code != 1 || !strings.Contains(out, "builtin.mcp.unconfigured_server") {
		t.Fatalf("unconfigured server: %d %s", code, out)
	}
	for cmd, want := range map[string]int{"/usr/bin/printf hello": 0, "printf hello | sh": 1, "/bin/rm -rf x": 1, "env": 1, "/usr/bin/printf $(id)": 1} {
		code, out, _ := cli(t, append([]string{"policy", "check", "--json", "--shell", cmd}, args...)...)
		if code != want {
			t.Errorf("%q: exit %d: %s", cmd, code, out)
		}
		if strings.Contains(out, "$(id)") || strings.Contains(out, "| sh") {
			t.Errorf("%q: the decision echoes the command: %s", cmd, out)
		}
	}
}

func TestConfigErrorsExitTwoWithEmptyStdout(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.toml")
	os.WriteFile(bad, []byte("schema_version = 1\n[options.shell]\nenabeld = true\n"), 0o600)
	code, out, errs := cli(t, "config", "validate", "--config", bad, "--bind", "workspace="+dir)
	if code != 2 || out != "" || !strings.Contains(errs, "config_unknown_option") || !strings.Contains(errs, "/options/shell/enabeld") || !strings.Contains(errs, ":3") {
		t.Fatalf("exit %d stdout %q stderr %q", code, out, errs)
	}
	rel := filepath.Join(dir, "rel.toml")
	os.WriteFile(rel, []byte("schema_version = 1\n[options.mcp.servers.records]\ntransport = \"stdio\"\ncommand = \"records-server\"\n"), 0o600)
	code, out, errs = cli(t, "config", "validate", "--config", rel, "--bind", "workspace="+dir)
	if code != 2 || out != "" || !strings.Contains(errs, "records") || !strings.Contains(errs, "absolute") {
		t.Fatalf("relative command: exit %d stderr %q", code, errs)
	}
	code, _, _ = cli(t, "config", "validate", "--config", rel, "--bogus")
	if code != 2 {
		t.Fatal("an unknown flag must exit 2")
	}
}

func TestDemoCompletes(t *testing.T) {
	code, out, errs := cli(t, "demo", "--json")
	var obj struct {
		Outcome struct {
			Status string `json:"status"`
			Output string `json:"output"`
		} `json:"outcome"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &obj) != nil || obj.Outcome.Status != "completed" || !strings.Contains(obj.Outcome.Output, "INV-1042") {
		t.Fatalf("exit %d stdout %q stderr %q", code, out, errs)
	}
}

func TestRunPreAdmissionJSONEnvelope(t *testing.T) {
	code, out, _ := cli(t, "run", "x", "--json", "--config", filepath.Join(t.TempDir(), "missing.toml"))
	if code != 2 || !strings.Contains(out, `"run_id":null`) || !strings.Contains(out, `"code":"invalid_configuration"`) {
		t.Fatalf("exit %d: %s", code, out)
	}
}

// TestKillDuringToolCallLeavesUnknownOutcome runs `pablo run` as a real
// process, SIGKILLs it while a tool call is in flight, and checks that the
// ledger reports that call as unknown and the earlier one as completed.
func TestKillDuringToolCallLeavesUnknownOutcome(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a process")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "pablo")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("alpha\n"), 0o600)
	// The marker is in the workspace, which the sandboxed command may
	// write with filesystem.write.
	marker := filepath.Join(ws, "started")
	script := `{"turns":[
	 {"text":["x"],"tool_calls":[{"name":"fs_read","arguments":{"path":"a.txt"}}]},
	 {"text":["y"],"tool_calls":[{"name":"shell_run","arguments":{"command":"touch ` + marker + ` && sleep 60","cwd":"."}}]},
	 {"text":["done"]}]}`
	os.WriteFile(filepath.Join(dir, "script.json"), []byte(script), 0o600)
	os.WriteFile(filepath.Join(dir, "deployment.toml"), []byte("schema_version = 1\n[options.model]\nprovider = \"script\"\nscript = { base = \"source\", path = \"script.json\" }\n[options.filesystem]\nwrite = true\n"), 0o600)
	store := filepath.Join(dir, "ledger.db")
	cmd := exec.Command(bin, "run", "go", "--config", filepath.Join(dir, "deployment.toml"), "--bind", "workspace="+ws, "--store", store, "--json")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		if time.Now().After(deadline) {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			cmd.Wait()
			t.Fatal("the shell call never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	cmd.Wait()
	// recover exits 1 when an outcome is unknown.
	out, err := exec.Command(bin, "ledger", "recover", "--store", store, "--json").Output()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("recover: %v, want exit 1 for an unknown outcome", err)
	}
	var rep struct {
		Tasks []struct {
			Outcome   any `json:"outcome"`
			Completed []struct {
				Kind, Name string
			} `json:"completed"`
			Unknown []struct {
				Kind, Name string
			} `json:"unknown"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal(out, &rep); err != nil || len(rep.Tasks) != 1 {
		t.Fatalf("report: %v %s", err, out)
	}
	task := rep.Tasks[0]
	if task.Outcome != nil || len(task.Unknown) != 1 || task.Unknown[0].Name != "shell.run" {
		t.Fatalf("want one unknown shell.run: %s", out)
	}
	var completedRead bool
	for _, c := range task.Completed {
		if c.Name == "fs.read" {
			completedRead = true
		}
	}
	if !completedRead {
		t.Fatalf("the earlier fs.read is not completed: %s", out)
	}
}

func TestSkillsListAndShow(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "deployment.toml")
	os.WriteFile(cfg, []byte("schema_version = 1\n[options.skills.roots]\nteam = { base = \"binding\", name = \"skills\", path = \".\" }\n[options.skills]\nactivate = [\"team/evidence-review\"]\n"), 0o600)
	base := []string{"--config", cfg, "--bind", "workspace=demo/work", "--bind", "skills=demo/skills"}
	code, out, _ := cli(t, append([]string{"skills", "list", "--json"}, base...)...)
	if code != 0 || !strings.Contains(out, `"qualified_name":"team/evidence-review"`) {
		t.Fatalf("list: %d %s", code, out)
	}
	for _, name := range []string{"team/evidence-review", "evidence-review"} {
		code, out, _ = cli(t, append([]string{"skills", "show", name, "--json"}, base...)...)
		if code != 0 || !strings.Contains(out, `"qualified_name":"team/evidence-review"`) {
			t.Fatalf("show %s: %d %s", name, code, out)
		}
	}
	code, _, _ = cli(t, append([]string{"skills", "show", "team/missing"}, base...)...)
	if code != 2 {
		t.Fatalf("an unknown skill is a lookup failure: exit %d", code)
	}
	for _, dir := range []string{presets, shipped} {
		code, out, _ = cli(t, "skills", "list", "--json", "--config", filepath.Join(dir, "production.toml"), "--bind", "workspace="+t.TempDir(), "--bind", "preset="+dir)
		if code != 0 || !strings.Contains(out, `"qualified_name":"preset/evidence"`) {
			t.Fatalf("%s: preset skills: %d %s", dir, code, out)
		}
	}
	broken := t.TempDir()
	os.MkdirAll(filepath.Join(broken, "bad"), 0o700)
	os.WriteFile(filepath.Join(broken, "bad", "SKILL.md"), []byte("---\nname: other\ndescription: x\n---\n"), 0o600)
	code, _, _ = cli(t, "skills", "list", "--config", cfg, "--bind", "workspace=demo/work", "--bind", "skills="+broken)
	if code != 1 {
		t.Fatalf("an invalid package exits 1, got %d", code)
	}
}

func TestRunJoinsTheCallersTrace(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "script.json"), []byte(`{"turns":[{"text":["ok"]}]}`), 0o600)
	cfg := filepath.Join(dir, "d.toml")
	os.WriteFile(cfg, []byte("schema_version = 1\n[options.model]\nprovider = \"script\"\nscript = { base = \"source\", path = \"script.json\" }\n"), 0o600)
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	base := []string{"run", "go", "--config", cfg, "--bind", "workspace=" + dir, "--json"}
	code, out, errs := cli(t, append(base, "--traceparent", parent, "--tracestate", "vendor=x")...)
	var obj struct {
		TraceID string `json:"trace_id"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &obj) != nil || obj.TraceID != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Fatalf("exit %d, trace %q: %s %s", code, obj.TraceID, out, errs)
	}
	for name, extra := range map[string][]string{
		"bad traceparent":        {"--traceparent", "00-zz"},
		"tracestate alone":       {"--tracestate", "vendor=x"},
		"traceparent over bound": {"--traceparent", parent + strings.Repeat("0", 500)},
	} {
		code, out, _ := cli(t, append(base, extra...)...)
		if code != 2 || !strings.Contains(out, `"invalid_arguments"`) {
			t.Errorf("%s: exit %d %s", name, code, out)
		}
	}
	// With propagators = [] the caller's context is checked but not joined.
	os.WriteFile(cfg, []byte("schema_version = 1\n[options.model]\nprovider = \"script\"\nscript = { base = \"source\", path = \"script.json\" }\n[options.otel]\npropagators = []\n"), 0o600)
	code, out, _ = cli(t, append(base, "--traceparent", parent)...)
	if code != 0 || json.Unmarshal([]byte(out), &obj) != nil || obj.TraceID == "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Fatalf("propagators = []: exit %d, trace %q", code, obj.TraceID)
	}
}

// TestLockedDeploymentModelIsNeverReplacedByAFlag: under lock no flag
// replaces the model, its endpoint or its credentials. --script and
// --fixture-endpoint are refused before any task starts (exit 2, the
// pre-admission envelope), on the locked production preset.
func TestLockedDeploymentModelIsNeverReplacedByAFlag(t *testing.T) {
	t.Parallel()
	script := filepath.Join(t.TempDir(), "script.json")
	os.WriteFile(script, []byte(`{"turns":[{"text":["{\"answer\":\"scripted\"}"]}]}`), 0o600)
	for _, flags := range [][]string{
		{"--script", script},
		{"--fixture-endpoint", "http://127.0.0.1:9/v1/chat/completions"},
		{"--loopback-http", "--fixture-endpoint", "http://127.0.0.1:9/v1/chat/completions"},
	} {
		t.Run(strings.Join(flags, " "), func(t *testing.T) {
			args := append([]string{"run", "--json", "hello"}, production(t)...)
			code, stdout, stderr := cli(t, append(args, flags...)...)
			if code != 2 || !strings.Contains(stderr, "lock") {
				t.Fatalf("exit %d, stdout %.300s, stderr %s", code, stdout, stderr)
			}
			var env struct {
				RunID   *string `json:"run_id"`
				Outcome any     `json:"outcome"`
				Error   struct {
					Code string `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(stdout), &env); err != nil || env.RunID != nil || env.Outcome != nil || env.Error.Code != "invalid_configuration" {
				t.Fatalf("envelope %q (%v)", stdout, err)
			}
		})
	}
}
