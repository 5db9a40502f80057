package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestHostEnvironmentIsNotReadableThroughProc: a shell command started with
// a cleared environment cannot read the host's own environment through
// /proc/$PPID/environ. The host runs as an unprivileged user (root reads any
// process's environment, which the README states), so the test needs root
// to start it as one.
func TestHostEnvironmentIsNotReadableThroughProc(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the host as an unprivileged user")
	}
	const nobody = 65534
	dir := t.TempDir()
	// The unprivileged host must reach its binary, config and workspace.
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "pablo")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	ws := filepath.Join(dir, "work")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(ws, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	// The inner sh walks up from its parent (the launcher's shell) to the
	// host, then reads the host's environment. In the sandbox's PID
	// namespace the walk ends at its init (PID 1) without finding the
	// host, which is refused as well.
	script := `{"turns":[
	 {"tool_calls":[{"name":"shell_run","arguments":{"command":"sh -c 'p=$PPID; while [ \"$p\" -gt 1 ] && [ \"$(cat /proc/$p/comm)\" != pablo ]; do read -r _ _ _ p _ < /proc/$p/stat; done; echo host=$p; [ \"$p\" -gt 1 ] && cat /proc/$p/environ || echo environ-refused'","cwd":"."}}]},
	 {"text":["done"]}]}`
	os.WriteFile(filepath.Join(dir, "script.json"), []byte(script), 0o644)
	for _, mode := range []string{"off", "required"} {
		t.Run(mode, func(t *testing.T) { hostEnvironmentProbe(t, bin, dir, ws, mode) })
	}
}

func hostEnvironmentProbe(t *testing.T, bin, dir, ws, mode string) {
	const nobody = 65534
	os.WriteFile(filepath.Join(dir, "d.toml"), []byte("schema_version = 1\n[options.model]\nprovider = \"script\"\nscript = { base = \"source\", path = \"script.json\" }\n[options.shell]\nenabled = true\n[options.shell.sandbox]\nmode = \""+mode+"\"\n"), 0o644)
	trace := filepath.Join(dir, "trace-"+mode)
	if err := os.Mkdir(trace, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chown(trace, nobody, nobody)
	const marker = "host-only-marker-5b1d07"
	cmd := exec.Command(bin, "run", "go", "--config", filepath.Join(dir, "d.toml"), "--bind", "workspace="+ws, "--trace", filepath.Join(trace, "t.jsonl"), "--capture-content", "--approve", "shell.run")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + ws, "PABLO_PROBE=" + marker}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	raw, err := os.ReadFile(filepath.Join(trace, "t.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), marker) || strings.Contains(string(out), marker) {
		t.Fatalf("the shell command read the host's environment:\n%s", raw)
	}
	if !strings.Contains(string(raw), "environ-refused") {
		t.Fatalf("the probe did not run:\n%s\n%s", out, raw)
	}
}
