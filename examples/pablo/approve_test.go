package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/approval"
)

// TestLedgerShowPrintsApprovals: a call that needs approval (here by
// options.approvals.filesystem_write) runs under `pablo run --approve`
// with its request and answer in the ledger, which `ledger show` prints
// bound to the call; without --approve there is no channel, and the call
// is denied under builtin.approval, recorded as no_channel. After the run's
// host has exited, the ledger alone says who approved what: `ledger show
// --json` gives each request's agent, call, arguments digest, resources,
// effect, answer and channel, and what the call then did.
func TestLedgerShowPrintsApprovals(t *testing.T) {
	for _, c := range []struct {
		name   string
		flags  []string
		status string
		want   []string
		audit  string // answer channel call_status
	}{
		{"Approved", []string{"--approve", "fs.write"}, "completed", []string{`rule "approval.requested": call call_1_1 arguments sha256:`, `allowed by layer "approval" rule "approval.allow_once": call call_1_1 arguments sha256:`, "effect write",
			"call call_1_1 fs.write (write, arguments sha256:", ": allow_once via host; the call settled completed, key idem_"}, "allow_once host completed"},
		{"NoChannel", nil, "policy_denied", []string{`denied by layer "approval" rule "approval.no_channel": call call_1_1`, ": no_channel via none; the call settled policy_denied"}, "no_channel none policy_denied"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			ws := filepath.Join(dir, "work")
			os.Mkdir(ws, 0o700)
			cfg := filepath.Join(dir, "d.toml")
			os.WriteFile(cfg, []byte("schema_version = 1\n[options.model]\nprovider = \"script\"\nscript = { base = \"source\", path = \"s.json\" }\n[options.filesystem]\nwrite = true\n[options.approvals]\nfilesystem_write = \"required\"\n"), 0o600)
			os.WriteFile(filepath.Join(dir, "s.json"), []byte(`{"turns":[{"tool_calls":[{"id":"c1","name":"fs_write","arguments":{"path":"a.txt","text":"x","expected_revision":null}}]},{"text":["done"]}]}`), 0o600)
			store := filepath.Join(dir, "ledger.db")
			_, out, errs := cli(t, append([]string{"run", "go", "--json", "--config", cfg, "--bind", "workspace=" + ws, "--store", store}, c.flags...)...)
			var obj struct {
				RunID   string `json:"run_id"`
				Outcome struct {
					Status string `json:"status"`
				} `json:"outcome"`
			}
			if json.Unmarshal([]byte(out), &obj) != nil || obj.Outcome.Status != c.status {
				t.Fatalf("run: %s %s, want %s", out, errs, c.status)
			}
			_, show, _ := cli(t, "ledger", "show", "--store", store, obj.RunID)
			for _, w := range c.want {
				if !strings.Contains(show, w) {
					t.Errorf("ledger show does not say %q:\n%s", w, show)
				}
			}
			_, js, _ := cli(t, "ledger", "show", "--json", "--store", store, obj.RunID)
			var report struct {
				Tasks []struct {
					RootAgentID string `json:"root_agent_id"`
				} `json:"tasks"`
				Approvals []approval.Record `json:"approvals"`
			}
			if err := json.Unmarshal([]byte(js), &report); err != nil || len(report.Tasks) != 1 || len(report.Approvals) != 1 {
				t.Fatalf("ledger show --json: %v %s", err, js)
			}
			a := report.Approvals[0]
			if a.TaskID != obj.RunID || a.AgentID != report.Tasks[0].RootAgentID || a.CallID != "call_1_1" || a.Capability != "fs.write" ||
				!strings.HasPrefix(a.ArgumentsDigest, "sha256:") || a.Effect != "write" ||
				!strings.HasPrefix(a.RequestID, "apr_") || a.RuleID == "" {
				t.Errorf("the approval is not bound to the call: %+v", a)
			}
			if got := a.Answer + " " + a.Channel + " " + a.CallStatus; got != c.audit {
				t.Errorf("audit %q, want %q", got, c.audit)
			}
			if a.IdempotencyKey != pablo.IdempotencyKey(obj.RunID, a.AgentID, "call_1_1") {
				t.Errorf("the call's key %q is not its derivation", a.IdempotencyKey)
			}
		})
	}
}

// TestDoctorTakesNoApprove: doctor checks what a run would use but asks
// nothing, so it refuses --approve, a flag it could not use, as any
// unknown flag.
func TestDoctorTakesNoApprove(t *testing.T) {
	code, out, _ := cli(t, "doctor", "--approve", "shell.run", "--config", filepath.Join("demo", "deployment.toml"), "--bind", "workspace="+filepath.Join("demo", "work"))
	if code != 2 || !strings.Contains(out, "unknown flag --approve") {
		t.Fatalf("doctor --approve: exit %d, %q; want the unknown flag", code, out)
	}
}

// TestUnknownCapabilityIsAUsageErrorWithDidYouMean: --approve, why and
// policy check naming a capability that exists nowhere in the deployment
// fail with exit 2 before anything runs, naming the nearest known name;
// before, `--approve shel.run` was accepted and the call then reported
// "rejected by the approver".
func TestUnknownCapabilityIsAUsageErrorWithDidYouMean(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	cfg := filepath.Join(dir, "d.toml")
	os.WriteFile(cfg, []byte("schema_version = 1\n[options.model]\nprovider = \"script\"\nscript = { base = \"source\", path = \"s.json\" }\n[options.shell]\nenabled = true\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "s.json"), []byte(`{"turns":[{"text":["done"]}]}`), 0o600)
	bind := []string{"--config", cfg, "--bind", "workspace=" + ws}
	for _, c := range []struct {
		args []string
		want string
	}{
		{append([]string{"run", "go", "--approve", "shel.run"}, bind...), `--approve "shel.run": no capability of this deployment is called that; did you mean "shell.run"?`},
		{append([]string{"policy", "check", "fs.reed"}, bind...), `policy check "fs.reed": no capability of this deployment is called that; did you mean "fs.read"?`},
		{append([]string{"why", "fs.wirte"}, bind...), `"fs.wirte" is no capability of this deployment; did you mean "fs.write"?`},
	} {
		code, out, errs := cli(t, c.args...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("pablo %s: exit %d (want 2), stderr %q lacks %q; stdout %q", strings.Join(c.args[:3], " "), code, errs, c.want, out)
		}
	}
	if code, out, errs := cli(t, append([]string{"run", "go", "--approve", "shell.run"}, bind...)...); code != 0 {
		t.Errorf("--approve of a known capability: exit %d\n%s\n%s", code, out, errs)
	}
}

// TestUnknownSkillFlagIsAnErrorWithDidYouMean: `run --skill` naming a
// Skill the catalog lacks exits 2 before the task, naming the nearest.
func TestUnknownSkillFlagIsAnErrorWithDidYouMean(t *testing.T) {
	code, out, errs := cli(t, "run", "go", "--config", filepath.Join("demo", "deployment.toml"), "--bind", "workspace="+t.TempDir(),
		"--bind", "skills="+filepath.Join("demo", "skills"), "--skill", "team/evidence-reviw")
	if want := `did you mean "team/evidence-review"?`; code != 2 || !strings.Contains(errs, want) {
		t.Fatalf("exit %d (want 2), stderr lacks %q: %s %s", code, want, errs, out)
	}
}
