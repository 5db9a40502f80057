package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pabloagent/pablo/internal/proc"
)

// TestNoProcessGroupOutlivesItsHostAfterReap: `pablo run` is killed with
// SIGKILL while a shell command and while a stdio MCP call run; `pablo
// ledger recover --reap` then finds each recorded group by its identity and
// kills it, so nothing of either group remains.
func TestNoProcessGroupOutlivesItsHostAfterReap(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("process-group identities are read from /proc")
	}
	if testing.Short() {
		t.Skip("builds and kills processes")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "pablo")
	fault := filepath.Join(dir, "fault")
	for _, b := range [][]string{{"-o", bin, "."}, {"-o", fault, "../mcpservers/fault"}} {
		if out, err := exec.Command("go", append([]string{"build"}, b...)...).CombinedOutput(); err != nil {
			t.Fatalf("build: %v\n%s", err, out)
		}
	}
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	marker := filepath.Join(dir, "started")
	grandchild := filepath.Join(dir, "grandchild.pid")
	for _, tc := range []struct {
		name, calls, extra string
	}{
		{"ShellCommand", `{"name":"shell_run","arguments":{"command":"touch ` + marker + ` && sleep 60","cwd":"."}}`, ""},
		{"StdioMCPCall", `{"name":"mcp/records/sleep","arguments":{"ms":60000}}`,
			"[options.mcp.servers.records]\ntransport = \"stdio\"\ncommand = \"" + fault + "\"\nargs = [\"-mode\", \"grandchild\", \"-pidfile\", \"" + grandchild + "\", \"-callmark\", \"" + marker + "\"]\nrequired = true\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(marker)
			script := filepath.Join(dir, tc.name+".json")
			os.WriteFile(script, []byte(`{"turns":[{"tool_calls":[`+tc.calls+`]},{"text":["done"]}]}`), 0o600)
			cfg := filepath.Join(dir, tc.name+".toml")
			os.WriteFile(cfg, []byte("schema_version = 1\n[options.model]\nprovider = \"script\"\nscript = { base = \"source\", path = \""+tc.name+".json\" }\n"+tc.extra), 0o600)
			store := filepath.Join(dir, tc.name+".db")
			cmd := exec.Command(bin, "run", "go", "--config", cfg, "--bind", "workspace="+ws, "--store", store, "--json")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(30 * time.Second)
			for {
				if _, err := os.Stat(marker); err == nil {
					break
				}
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					cmd.Wait()
					t.Fatal("the call never started")
				}
				time.Sleep(10 * time.Millisecond)
			}
			cmd.Process.Kill() // SIGKILL of the host alone
			cmd.Wait()

			out, err := exec.Command(bin, "ledger", "recover", "--store", store, "--reap", "--json").Output()
			if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() != 1) {
				t.Fatalf("recover: %v %s", err, out)
			}
			var rep struct {
				Tasks []struct {
					Groups []struct{ Pgid int } `json:"process_groups"`
				} `json:"tasks"`
				Survivors []struct {
					Pgid int   `json:"pgid"`
					Pids []int `json:"pids"`
				} `json:"surviving_process_groups"`
			}
			if err := json.Unmarshal(out, &rep); err != nil || len(rep.Tasks) != 1 {
				t.Fatalf("report: %v %s", err, out)
			}
			if len(rep.Survivors) == 0 {
				t.Fatalf("no surviving group was found to reap: %s", out)
			}
			// The leaders died with their host (parent-death signal); what
			// --reap found are the members they left.
			for _, s := range rep.Survivors {
				for _, p := range s.Pids {
					if p == s.Pgid {
						t.Errorf("leader %d outlived its host: %s", p, out)
					}
				}
			}
			var pgids []int
			for _, g := range rep.Tasks[0].Groups {
				pgids = append(pgids, g.Pgid)
			}
			if tc.name == "StdioMCPCall" {
				b, _ := os.ReadFile(grandchild)
				pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
				found := false
				for _, s := range rep.Survivors {
					for _, p := range s.Pids {
						found = found || p == pid
					}
				}
				if !found {
					t.Errorf("the server's grandchild %d is not among the reaped: %s", pid, out)
				}
			}
			// SIGKILL is delivered at once; the dead are reaped by init.
			for _, pgid := range pgids {
				var alive []proc.Member
				for end := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
					members, err := proc.GroupMembers(pgid)
					if err != nil {
						t.Fatal(err)
					}
					alive = alive[:0]
					for _, m := range members {
						if m.Alive() {
							alive = append(alive, m)
						}
					}
					if len(alive) == 0 || time.Now().After(end) {
						break
					}
				}
				if len(alive) > 0 {
					for _, m := range alive {
						syscall.Kill(m.Pid, syscall.SIGKILL)
					}
					t.Errorf("group %d still has live members after --reap: %+v", pgid, alive)
				}
			}
		})
	}
}
