package mcp

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestConformanceClientScenarios runs the MCP conformance suite's client
// scenarios against a client built on this package. Each must pass with
// its checks actually executed: zero checks is a failure.
func TestConformanceClientScenarios(t *testing.T) {
	p := needPeers(t)
	dir := t.TempDir()
	client := filepath.Join(dir, "conformanceclient")
	if out, err := exec.Command("go", "build", "-o", client, "./internal/conformanceclient").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	for _, scenario := range []string{"initialize", "tools_call", "sse-retry"} {
		t.Run(scenario, func(t *testing.T) {
			t.Parallel()
			out := filepath.Join(dir, "out-"+scenario)
			cmd := exec.Command(p.node, p.conformance, "client", "--command", client, "--scenario", scenario, "--timeout", "20000", "-o", out)
			log, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("conformance %s: %v\n%s", scenario, err, log)
			}
			files, _ := filepath.Glob(filepath.Join(out, scenario+"-*", "checks.json"))
			if len(files) != 1 {
				t.Fatalf("no checks.json for %s:\n%s", scenario, log)
			}
			b, err := os.ReadFile(files[0])
			if err != nil {
				t.Fatal(err)
			}
			var checks []struct {
				ID, Status, ErrorMessage string
			}
			if err := json.Unmarshal(b, &checks); err != nil {
				t.Fatal(err)
			}
			passed := 0
			for _, c := range checks {
				switch c.Status {
				case "SUCCESS":
					passed++
				case "FAILURE", "WARNING":
					t.Errorf("check %s: %s %s", c.ID, c.Status, c.ErrorMessage)
				}
			}
			if passed == 0 {
				t.Fatalf("scenario %s executed no passing check:\n%s", scenario, log)
			}
			t.Logf("%s: %d checks passed", scenario, passed)
		})
	}
}
