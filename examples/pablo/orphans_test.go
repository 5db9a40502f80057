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

// deathWithin bounds how long a killed process may take to be gone: a
// SIGKILL, a parent-death signal or a PID namespace's teardown is
// delivered at once, but the process exits only when next scheduled,
// which a loaded host (a new session is a scheduling group of its own)
// can put off for seconds. The waits end as soon as the processes are
// gone, so the bound costs a passing run nothing.
const deathWithin = 30 * time.Second

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
		// The member to reap is started before the marker, so the host is
		// never killed in the moment between the two (a `touch && sleep`
		// leaves none when the host dies before the shell forked sleep).
		{"ShellCommand", `{"name":"shell_run","arguments":{"command":"sleep 60 & touch ` + marker + ` && wait","cwd":"."}}`, ""},
		{"StdioMCPCall", `{"name":"mcp/records/sleep","arguments":{"ms":60000}}`,
			"[options.mcp.servers.records]\ntransport = \"stdio\"\ncommand = \"" + fault + "\"\nargs = [\"-mode\", \"grandchild\", \"-pidfile\", \"" + grandchild + "\", \"-callmark\", \"" + marker + "\"]\nrequired = true\n[options.mcp.servers.records.sandbox]\nmode = \"off\"\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(marker)
			script := filepath.Join(dir, tc.name+".json")
			os.WriteFile(script, []byte(`{"turns":[{"tool_calls":[`+tc.calls+`]},{"text":["done"]}]}`), 0o600)
			cfg := filepath.Join(dir, tc.name+".toml")
			// Reaping is what an unconfined group needs after its host died:
			// the host opts out of the sandbox, whose PID namespace leaves
			// nothing to reap (TestSandboxedProcessesDieWithTheirHost).
			os.WriteFile(cfg, []byte("schema_version = 1\n[options.model]\nprovider = \"script\"\nscript = { base = \"source\", path = \""+tc.name+".json\" }\n[options.shell.sandbox]\nmode = \"off\"\n"+tc.extra), 0o600)
			store := filepath.Join(dir, tc.name+".db")
			cmd := exec.Command(bin, "run", "go", "--config", cfg, "--bind", "workspace="+ws, "--store", store, "--json", "--approve", "shell.run")
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

			// The leaders die with their host (parent-death signal): the
			// kernel queues the SIGKILL when the host exits, and the
			// leader is gone once it is next scheduled, which on a busy
			// host (a new session is a scheduling group of its own) can
			// come after the next command has started. Wait for that,
			// bounded, before asking what survived.
			listed, err := exec.Command(bin, "ledger", "recover", "--store", store, "--json").Output()
			if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() != 1) {
				t.Fatalf("recover: %v %s", err, listed)
			}
			var recorded struct {
				Tasks []struct {
					Groups []struct{ Pgid int } `json:"process_groups"`
				} `json:"tasks"`
			}
			if err := json.Unmarshal(listed, &recorded); err != nil || len(recorded.Tasks) != 1 || len(recorded.Tasks[0].Groups) == 0 {
				t.Fatalf("no process group was recorded: %v %s", err, listed)
			}
			for _, g := range recorded.Tasks[0].Groups {
				if !leaderGone(t, g.Pgid, deathWithin) {
					t.Errorf("leader %d outlived its host by %s", g.Pgid, deathWithin)
				}
			}

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
				for end := time.Now().Add(deathWithin); ; time.Sleep(10 * time.Millisecond) {
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

// TestSandboxedProcessesDieWithTheirHost: `pablo run` is killed with
// SIGKILL while a sandboxed shell command runs that left its process group
// (`setsid -f`); with nothing reaped, no process of the command survives.
// The control run with the sandbox off shows the daemon surviving.
func TestSandboxedProcessesDieWithTheirHost(t *testing.T) {
	if runtime.GOOS != "linux" || testing.Short() {
		t.Skip("builds and kills processes; the sandbox is Linux only")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "pablo")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	for _, mode := range []string{"required", "off"} {
		ws := filepath.Join(dir, "work-"+mode)
		os.Mkdir(ws, 0o700)
		nap := "3600." + strconv.Itoa(os.Getpid()) + strconv.Itoa(len(mode))
		marker := filepath.Join(ws, "started")
		command := "setsid -f /bin/sh -c 'touch " + marker + "; exec sleep " + nap + "' </dev/null >/dev/null 2>&1; sleep 60"
		args, _ := json.Marshal(map[string]string{"command": command, "cwd": "."})
		os.WriteFile(filepath.Join(dir, mode+".json"), []byte(`{"turns":[{"tool_calls":[{"name":"shell_run","arguments":`+string(args)+`}]},{"text":["done"]}]}`), 0o600)
		cfg := filepath.Join(dir, mode+".toml")
		os.WriteFile(cfg, []byte("schema_version = 1\n[options.model]\nprovider = \"script\"\nscript = { base = \"source\", path = \""+mode+".json\" }\n[options.filesystem]\nwrite = true\n[options.shell.sandbox]\nmode = \""+mode+"\"\n"), 0o600)
		cmd := exec.Command(bin, "run", "go", "--config", cfg, "--bind", "workspace="+ws, "--approve", "shell.run")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if _, err := os.Stat(marker); err == nil {
				break
			}
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("%s: the command never started", mode)
			}
		}
		cmd.Process.Kill() // SIGKILL of the host alone, and no reap
		cmd.Wait()
		// The kernel tears the sandbox down once bubblewrap is gone; give
		// it the moment that takes.
		var survivors []int
		for end := time.Now().Add(deathWithin); ; time.Sleep(10 * time.Millisecond) {
			survivors = pidsWith(nap)
			if len(survivors) == 0 || mode == "off" || time.Now().After(end) {
				break
			}
		}
		for _, pid := range survivors {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		if mode == "required" && len(survivors) > 0 {
			t.Errorf("a sandboxed daemon outlived its host: %v", survivors)
		}
		if mode == "off" && len(survivors) == 0 {
			t.Error("control: with the sandbox off the setsid daemon did not survive, so the test cannot catch it")
		}
	}
}

// pidsWith lists the processes whose command line holds arg.
func pidsWith(arg string) []int {
	names, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var pids []int
	for _, n := range names {
		if b, err := os.ReadFile(n); err == nil && strings.Contains(string(b), arg) {
			if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(n))); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// TestSandboxedMCPServerDaemonDiesWithItsHost: `pablo run` is killed with
// SIGKILL during a call to a sandboxed stdio server that started a
// long-lived child; with nothing reaped, no process of the server's PID
// namespace survives. The control run with the server's sandbox off shows
// the child surviving its host.
func TestSandboxedMCPServerDaemonDiesWithItsHost(t *testing.T) {
	if runtime.GOOS != "linux" || testing.Short() {
		t.Skip("builds and kills processes; the sandbox is Linux only")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "pablo")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	fault := builtFault(t, dir)
	for _, mode := range []string{"required", "off"} {
		ws := filepath.Join(dir, "work-"+mode)
		os.Mkdir(ws, 0o700)
		marker, pidfile := filepath.Join(ws, "called"), filepath.Join(ws, "pid")
		tag := "daemon-canary-" + mode + strconv.Itoa(os.Getpid())
		os.WriteFile(filepath.Join(dir, mode+".json"), []byte(`{"turns":[{"tool_calls":[{"name":"mcp/records/sleep","arguments":{"ms":60000}}]},{"text":["done"]}]}`), 0o600)
		cfg := filepath.Join(dir, mode+".toml")
		os.WriteFile(cfg, []byte("schema_version = 1\n[options.model]\nprovider = \"script\"\nscript = { base = \"source\", path = \""+mode+".json\" }\n"+
			"[options.filesystem]\nwrite = true\n[options.mcp.servers.records]\ntransport = \"stdio\"\ncommand = \""+fault+"\"\n"+
			"args = [\"-mode\", \"grandchild\", \"-pidfile\", \""+pidfile+"\", \"-callmark\", \""+marker+"\", \"-desc\", \""+tag+"\"]\n"+
			"[options.mcp.servers.records.sandbox]\nmode = \""+mode+"\"\nfilesystem = \"workspace-write\"\n"), 0o600)
		cmd := exec.Command(bin, "run", "go", "--config", cfg, "--bind", "workspace="+ws, "--approve", "shell.run")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if _, err := os.Stat(marker); err == nil {
				break
			}
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("%s: the call never started", mode)
			}
		}
		// What to look for once the host is gone: in the sandbox, every
		// process of the server's PID namespace; unconfined, the child the
		// server wrote down.
		var ns string
		var child int
		own, err := os.Readlink("/proc/self/ns/pid")
		if err != nil || own == "" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("cannot read this process's PID namespace: %v", err)
		}
		if mode == "required" {
			// The server inside the sandbox, never bubblewrap outside it
			// (whose command line holds the tag too): its PID namespace
			// is not ours.
			for _, pid := range pidsWith(tag) {
				if l, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/pid"); err == nil && l != own {
					ns = l
					break
				}
			}
		}
		if b, err := os.ReadFile(pidfile); err == nil && mode == "off" {
			child, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		if ns == "" && child == 0 {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("%s: found neither the server's namespace nor its child", mode)
		}
		cmd.Process.Kill() // SIGKILL of the host alone, and no reap
		cmd.Wait()
		var left []int
		for end := time.Now().Add(deathWithin); ; time.Sleep(10 * time.Millisecond) {
			left = left[:0]
			if ns != "" && ns != own {
				names, _ := filepath.Glob("/proc/[0-9]*/ns/pid")
				for _, n := range names {
					if l, err := os.Readlink(n); err == nil && l == ns {
						pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(n))))
						left = append(left, pid)
					}
				}
			} else if child > 1 && syscall.Kill(child, 0) == nil {
				left = append(left, child)
			}
			if len(left) == 0 || mode == "off" || time.Now().After(end) {
				break
			}
		}
		for _, pid := range left {
			if pid > 1 {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		if mode == "required" && len(left) > 0 {
			t.Errorf("processes of the sandboxed server's PID namespace outlived its host: %v", left)
		}
		if mode == "off" && len(left) == 0 {
			t.Error("control: with the sandbox off the server's child did not survive its host, so the test cannot catch it")
		}
	}
}

// leaderGone waits up to limit for the process leading group pgid to have
// exited (gone, or a zombie its new parent has yet to reap).
func leaderGone(t *testing.T, pgid int, limit time.Duration) bool {
	t.Helper()
	for end := time.Now().Add(limit); ; time.Sleep(10 * time.Millisecond) {
		members, err := proc.GroupMembers(pgid)
		if err != nil {
			t.Fatal(err)
		}
		alive := false
		for _, m := range members {
			alive = alive || (m.Pid == pgid && m.Alive())
		}
		if !alive {
			return true
		}
		if time.Now().After(end) {
			return false
		}
	}
}
