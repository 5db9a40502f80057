package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestFanInThroughRunAndACP: the fan-in example's one deployment runs as
// the seed says, through `pablo run` and through `pablo acp`: the root
// answers after its three children, and over ACP the prompt ends end_turn.
func TestFanInThroughRunAndACP(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildPablo(t, t.TempDir())
	dir, err := filepath.Abs("../fanin")
	if err != nil {
		t.Fatal(err)
	}
	cfg, ws := filepath.Join(dir, "deployment.toml"), filepath.Join(dir, "work")
	out, err := exec.Command(bin, "run", "--config", cfg, "--bind", "workspace="+ws, "--json", "Compare the regions.").Output()
	if err != nil {
		t.Fatalf("pablo run: %v\n%s", err, out)
	}
	var obj struct {
		Outcome struct {
			Status string `json:"status"`
			Output string `json:"output"`
		} `json:"outcome"`
		Accounting struct {
			ModelCalls string `json:"model_calls"`
		} `json:"accounting"`
	}
	if err := json.Unmarshal(out, &obj); err != nil || obj.Outcome.Status != "completed" || !strings.Contains(obj.Outcome.Output, "South grew faster") || obj.Accounting.ModelCalls != "10" {
		t.Fatalf("pablo run --json: %v %s", err, out)
	}

	p := startACP(t, bin, "--config", cfg, "--bind", "workspace="+ws)
	if _, _, err := p.call("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	sid, err := p.session(ws)
	if err != nil {
		t.Fatal(err)
	}
	reason, notes, err := p.prompt(sid, "Compare the regions.")
	if err != nil || reason != "end_turn" || notes == 0 {
		t.Fatalf("pablo acp: %q after %d updates, %v\n%s", reason, notes, err, p.stderr.String())
	}
}
