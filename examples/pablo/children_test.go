package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestChildrenTreeSurvivesKill9InTheLedger: `pablo run` with children
// enabled is killed with SIGKILL while two children run a shell command
// and a third waits in the queue; `pablo ledger recover` then shows the
// tree: the root and the two children that ran, each child's dispatched
// call unknown (never replayed), and nothing of the queued one.
func TestChildrenTreeSurvivesKill9InTheLedger(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the shell sandbox and process groups are Linux's")
	}
	if testing.Short() {
		t.Skip("builds and kills processes")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "pablo")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	var spawns, agents []string
	for i := range 3 {
		input := fmt.Sprintf("child %d", i)
		spawns = append(spawns, fmt.Sprintf(`{"id":"s%d","name":"subagent","arguments":{"action":"spawn","request":{"input":%q,"capabilities":{"tools":["shell.run"]}}}}`, i, input))
		agents = append(agents, fmt.Sprintf(`{"input":%q,"turns":[{"tool_calls":[{"name":"shell_run","arguments":{"command":"touch started-%d && sleep 60","cwd":"."}}]},{"text":["done"]}]}`, input, i))
	}
	script := `{"turns":[{"tool_calls":[` + strings.Join(spawns, ",") + `]},
		{"tool_calls":[{"name":"subagent","arguments":{"action":"wait","agent_ids":["{{agent_id:s0}}","{{agent_id:s1}}","{{agent_id:s2}}"],"mode":"all","timeout_ms":60000}}]},
		{"text":["done"]}],"agents":[` + strings.Join(agents, ",") + `]}`
	os.WriteFile(filepath.Join(dir, "script.json"), []byte(script), 0o600)
	cfg := filepath.Join(dir, "deployment.toml")
	os.WriteFile(cfg, []byte(`schema_version = 1
[options.model]
provider = "script"
script = { base = "source", path = "script.json" }
[options.filesystem]
write = true
[options.children]
enabled = true
`), 0o600)
	store := filepath.Join(dir, "ledger.db")
	cmd := exec.Command(bin, "run", "go", "--config", cfg, "--bind", "workspace="+ws, "--store", store, "--json")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	started := func() int {
		n := 0
		for i := range 3 {
			if _, err := os.Stat(filepath.Join(ws, fmt.Sprintf("started-%d", i))); err == nil {
				n++
			}
		}
		return n
	}
	for deadline := time.Now().Add(30 * time.Second); started() < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("two children never started their commands\n%s", stderr.String())
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	if n := started(); n != 2 {
		t.Fatalf("%d children ran, want 2 active and 1 queued", n)
	}

	out, err := exec.Command(bin, "ledger", "recover", "--store", store, "--reap", "--json").Output()
	if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() != 1) {
		t.Fatalf("recover: %v %s", err, out)
	}
	var rep struct {
		Tasks []struct {
			Agents []struct {
				AgentID  string `json:"agent_id"`
				ParentID string `json:"parent_id"`
				Kind     string `json:"kind"`
			} `json:"agents"`
			Unknown []struct {
				AgentID string `json:"agent_id"`
				Name    string `json:"name"`
			} `json:"unknown"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal(out, &rep); err != nil || len(rep.Tasks) != 1 {
		t.Fatalf("report: %v %s", err, out)
	}
	task := rep.Tasks[0]
	kids := map[string]bool{}
	for _, a := range task.Agents {
		if a.Kind == "local_acp_temporary" {
			if a.ParentID == "" {
				t.Errorf("child %s has no parent", a.AgentID)
			}
			kids[a.AgentID] = true
		}
	}
	if len(task.Agents) != 3 || len(kids) != 2 {
		t.Fatalf("agents %+v, want the root and the two children that ran", task.Agents)
	}
	unknown := map[string]int{}
	for _, u := range task.Unknown {
		if u.Name == "shell.run" {
			unknown[u.AgentID]++
		}
	}
	for id := range kids {
		if unknown[id] != 1 {
			t.Errorf("child %s: %d unknown shell calls, want its one dispatched call: %s", id, unknown[id], out)
		}
	}
}
