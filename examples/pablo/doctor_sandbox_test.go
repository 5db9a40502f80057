package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDoctorProbeSandboxBlocksEveryCanary: `pablo doctor --probe sandbox`
// runs the live boundary canaries on this host (a write outside the
// workspace, a read of the host's environment and of a file only the
// host's user reads, a loopback connection, a daemon that tries to outlive
// the call, keystrokes pushed into a terminal the probe owns and given to
// the sandbox as its controlling terminal, the terminal requests the
// seccomp filter refuses) and the suite holds each one blocked, so a
// regression of the sandbox cannot pass unnoticed. The doctor also reports
// the sandbox a call would get.
func TestDoctorProbeSandboxBlocksEveryCanary(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	cfg := filepath.Join(dir, "d.toml")
	os.WriteFile(cfg, []byte("schema_version = 1\n[options.model]\nprovider = \"script\"\nscript = { base = \"source\", path = \"s.json\" }\n[options.shell]\nenabled = true\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "s.json"), []byte(`{"turns":[{"text":["x"]}]}`), 0o600)
	code, out, errOut := cli(t, "doctor", "--json", "--probe", "sandbox", "--config", cfg, "--bind", "workspace="+ws)
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	var rep doctorReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	canaries := 0
	for _, c := range rep.Checks {
		switch {
		case c.Name == "sandbox":
			if !strings.Contains(c.Detail, "shell.run required filesystem=read-only network=deny") {
				t.Errorf("sandbox check %q does not name the shell's sandbox", c.Detail)
			}
		case strings.HasPrefix(c.Name, "probe.sandbox."):
			canaries++
			if c.Status != "ok" || !strings.HasPrefix(c.Detail, "blocked") {
				t.Errorf("canary %s: %s %s", c.Name, c.Status, c.Detail)
			}
		}
	}
	if canaries != 7 || !strings.Contains(out, `"probe.sandbox.type_into_terminal"`) || !strings.Contains(out, `"probe.sandbox.terminal_ioctl"`) {
		t.Fatalf("%d canaries ran, want 7 with the terminal's two: %s", canaries, out)
	}
}
