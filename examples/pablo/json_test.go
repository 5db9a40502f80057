package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestJSONIsHonouredOrRefused runs the built binary: a command given --json
// prints exactly one compact JSON document, one line, on success and on
// failure; a command that cannot answer in JSON refuses the flag (exit 2).
func TestJSONIsHonouredOrRefused(t *testing.T) {
	pablo := builtPablo(t)
	demo := []string{"--config", filepath.Join("demo", "deployment.toml"), "--bind", "workspace=" + filepath.Join("demo", "work"), "--bind", "skills=" + filepath.Join("demo", "skills")}
	bad := []string{"--config", filepath.Join(t.TempDir(), "absent.toml")}
	store := filepath.Join(t.TempDir(), "ledger.db")
	if code, _, errOut := pablo("demo", "--store", store); code != 0 {
		t.Fatalf("demo: exit %d: %s", code, errOut)
	}
	cases := []struct {
		name string
		args []string
		exit int
		key  string // a key the document must hold
	}{
		{"run bogus flag", []string{"run", "x", "--json", "--bogus"}, 2, "error"},
		{"run bad config", append([]string{"run", "x", "--json"}, bad...), 2, "error"},
		{"demo", []string{"demo", "--json"}, 0, "outcome"},
		{"config validate", append([]string{"config", "validate", "--json"}, demo...), 0, "fingerprint"},
		{"config validate bad config", append([]string{"config", "validate", "--json"}, bad...), 2, "error"},
		{"config validate bogus flag", append([]string{"config", "validate", "--json", "--bogus"}, demo...), 2, "error"},
		{"config explain", append([]string{"config", "explain", "--json"}, demo...), 0, "fingerprint"},
		{"config explain bad config", append([]string{"config", "explain", "--json"}, bad...), 2, "error"},
		{"policy check", append([]string{"policy", "check", "fs.read", "--json"}, demo...), 0, "allowed"},
		{"policy check bad config", append([]string{"policy", "check", "fs.read", "--json"}, bad...), 2, "error"},
		{"policy check two ids", append([]string{"policy", "check", "fs.read", "fs.list", "--json"}, demo...), 2, "error"},
		{"skills list", append([]string{"skills", "list", "--json"}, demo...), 0, "skills"},
		{"skills list bad config", append([]string{"skills", "list", "--json"}, bad...), 2, "error"},
		{"skills show unknown", append([]string{"skills", "show", "team/absent", "--json"}, demo...), 2, "error"},
		{"mcp probe no servers", append([]string{"mcp", "probe", "--json"}, demo...), 0, "servers"},
		{"mcp probe bad config", append([]string{"mcp", "probe", "--json"}, bad...), 2, "error"},
		{"doctor", append([]string{"doctor", "--json"}, demo...), 0, "checks"},
		{"doctor bad config", append([]string{"doctor", "--json"}, bad...), 2, "checks"},
		{"ledger show", []string{"ledger", "show", "--json", "--store", store}, 0, "tasks"},
		{"ledger show bogus flag", []string{"ledger", "show", "--json", "--bogus"}, 2, "error"},
		{"ledger recover no store flag", []string{"ledger", "recover", "--json"}, 2, "error"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := pablo(c.args...)
			if code != c.exit {
				t.Errorf("exit %d, want %d (stderr %q)", code, c.exit, errOut)
			}
			if strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "\n") {
				t.Fatalf("stdout is not one line: %q", out)
			}
			var doc map[string]json.RawMessage
			if err := json.Unmarshal([]byte(out), &doc); err != nil {
				t.Fatalf("stdout is not one JSON object: %v: %q", err, out)
			}
			if _, ok := doc[c.key]; !ok {
				t.Errorf("document lacks %q: %s", c.key, out)
			}
		})
	}
	if code, out, _ := pablo(append([]string{"config", "render", "--json"}, demo...)...); code != 2 || out != "" {
		t.Errorf("config render --json: exit %d, stdout %q; want it refused", code, out)
	}
}

// TestValidateRefusesWhatRunRefuses: config validate judges every path
// object against the bindings, as run does, and says what it left unchecked.
func TestValidateRefusesWhatRunRefuses(t *testing.T) {
	pablo := builtPablo(t)
	noSkills := []string{"--config", filepath.Join("demo", "deployment.toml"), "--bind", "workspace=" + filepath.Join("demo", "work")}
	runCode, _, _ := pablo(append([]string{"run", "x", "--script", filepath.Join("demo", "script.json")}, noSkills...)...)
	code, out, errOut := pablo(append([]string{"config", "validate"}, noSkills...)...)
	if runCode != 2 || code != 2 || out != "" || !strings.Contains(errOut, `binding "skills"`) {
		t.Errorf("run exit %d; validate exit %d, stdout %q, stderr %q", runCode, code, out, errOut)
	}
	code, out, _ = pablo(append([]string{"config", "validate", "--bind", "skills=" + filepath.Join("demo", "skills")}, noSkills...)...)
	if code != 0 || !strings.HasPrefix(out, "valid sha256:") || !strings.Contains(out, "not checked offline: credential values") {
		t.Errorf("validate: exit %d, stdout %q", code, out)
	}
}

// TestMissingCredentialHasOneCode: run's text, run's envelope and doctor
// name a missing credential the same way, credential_unavailable, and the
// envelope says why in a bounded message.
func TestMissingCredentialHasOneCode(t *testing.T) {
	pablo := builtPablo(t)
	args := []string{"--config", filepath.Join(originals, "examples", "vercel.toml"), "--bind", "workspace=" + t.TempDir()}
	code, out, errOut := pablo(append([]string{"run", "x"}, args...)...)
	if code != 2 || out != "" || strings.Contains(errOut, "pablo: pablo:") || !strings.Contains(errOut, `credential "gateway"`) {
		t.Errorf("run: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	_, out, _ = pablo(append([]string{"run", "x", "--json"}, args...)...)
	var env struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if err := json.Unmarshal([]byte(out), &env); err != nil || env.Error.Code != "credential_unavailable" || !strings.Contains(env.Error.Message, `credential "gateway"`) {
		t.Errorf("run --json: %q", out)
	}
	code, out, _ = pablo(append([]string{"doctor", "--json"}, args...)...)
	if code != 3 || !strings.Contains(out, `"code":"credential_unavailable"`) {
		t.Errorf("doctor: exit %d, %q", code, out)
	}
}

// TestRequiredServerFailureSaysWhy: a required MCP server that cannot start
// ends the task failed/tool_startup/not_sent, and the reason is in the task
// object, the trace and on stderr.
func TestRequiredServerFailureSaysWhy(t *testing.T) {
	pablo := builtPablo(t)
	dir := t.TempDir()
	fault := builtFault(t, dir)
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	script := filepath.Join(dir, "turns.json")
	os.WriteFile(script, []byte(`{"turns":[{"text":["never reached"]}]}`), 0o600)
	cfg := filepath.Join(dir, "d.toml")
	os.WriteFile(cfg, []byte(`schema_version = 1
[options.model]
provider = "script"
script = { base = "source", path = "turns.json" }
[options.mcp.servers.records]
transport = "stdio"
command = "`+fault+`"
args = ["-mode", "exit"]
required = true
`), 0o600)
	trace := filepath.Join(dir, "trace.jsonl")
	args := []string{"run", "x", "--config", cfg, "--bind", "workspace=" + ws, "--trace", trace}
	code, out, errOut := pablo(append(args, "--json")...)
	var obj struct {
		Outcome struct{ Status, Code, Delivery, Reason string } `json:"outcome"`
	}
	if err := json.Unmarshal([]byte(out), &obj); err != nil {
		t.Fatalf("exit %d: %v: %q %q", code, err, out, errOut)
	}
	o := obj.Outcome
	if code != 1 || o.Status != "failed" || o.Code != "tool_startup" || o.Delivery != "not_sent" || !strings.Contains(o.Reason, "records") {
		t.Errorf("exit %d, outcome %+v", code, o)
	}
	raw, err := os.ReadFile(trace)
	if err != nil || !strings.Contains(string(raw), `"tool_startup"`) || !strings.Contains(string(raw), `"reason":"mcp: server \"records\": startup failed`) {
		t.Errorf("the trace lacks the reason (%v): %s", err, raw)
	}
	os.Remove(trace)
	if code, _, errOut = pablo(args...); code != 1 || !strings.Contains(errOut, "tool_startup") || !strings.Contains(errOut, "why: ") {
		t.Errorf("text mode: exit %d, stderr %q", code, errOut)
	}
}
