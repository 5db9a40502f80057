package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
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

// TestDoctorProbeSandboxNeedsNoCredential: the sandbox's canaries use no
// credential, so a deployment whose provider key is missing from the
// environment still gets every canary from `pablo doctor --probe sandbox`,
// the egress canary of network allowlist included
// (the shipped development preset, through the built binary), each one
// blocked; the failed credentials check keeps its finding and the exit
// code 3.
func TestDoctorProbeSandboxNeedsNoCredential(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "pablo")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	preset, err := filepath.Abs(shipped)
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	cmd := exec.Command(bin, "doctor", "--json", "--probe", "sandbox",
		"--config", filepath.Join(preset, "development.toml"), "--bind", "workspace="+ws, "--bind", "preset="+preset)
	// No provider key: the environment holds only what finding programs needs.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	cmd.Stdout, cmd.Stderr = &out, &errb
	code := 0
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatal(err)
		}
		code = ee.ExitCode()
	}
	var rep doctorReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("exit %d: not a report: %q %s", code, out.String(), errb.String())
	}
	if cred := namedCheck(rep, "credentials"); code != doctorCredential || rep.ExitCode != doctorCredential || cred.Status != "failed" || cred.Code != "credential_unavailable" {
		t.Fatalf("exit %d, report exit %d, credentials %+v, want the credential's exit 3", code, rep.ExitCode, cred)
	}
	canaries := map[string]bool{}
	for _, c := range rep.Checks {
		if c.Name == "probe.sandbox" {
			t.Fatalf("the probe was skipped: %s", c.Detail)
		}
		if name, ok := strings.CutPrefix(c.Name, "probe.sandbox."); ok {
			canaries[name] = true
			if c.Status != "ok" || !strings.HasPrefix(c.Detail, "blocked") {
				t.Errorf("canary %s: %s %s", c.Name, c.Status, c.Detail)
			}
		}
	}
	for _, name := range []string{"write_outside_workspace", "read_host_environment", "read_root_only_file",
		"connect_loopback", "outlive_the_call", "type_into_terminal", "terminal_ioctl"} {
		if !canaries[name] {
			t.Errorf("canary %s was not reported: %s", name, out.String())
		}
	}
	// The egress canary, the binary its own forwarder: the allowed
	// loopback fixture reached through the proxy, every escape refused.
	for _, name := range []string{"allowed", "egress_other_port", "egress_ip_literal", "egress_direct"} {
		c := namedCheck(rep, "probe.egress."+name)
		want := "blocked"
		if name == "allowed" {
			want = "reached"
		}
		if c.Status != "ok" || !strings.HasPrefix(c.Detail, want) {
			t.Errorf("egress canary %s: %+v, want ok and %s", name, c, want)
		}
	}
}

// TestDoctorProbeSandboxNeedsAWorkingBubblewrap: the sandbox probe is
// gated on what it does need: where bubblewrap does not work the sandbox
// check fails and no canary runs, the skip naming that check (the missing
// credential before it still sets the exit code).
func TestDoctorProbeSandboxNeedsAWorkingBubblewrap(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	preset, err := filepath.Abs(shipped)
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	h := &host{stdout: &out, stderr: &errb, lookupEnv: func(string) (string, bool) { return "", false }, workDir: ws, bubblewrap: "/nonexistent/bwrap"}
	code := run(context.Background(), []string{"doctor", "--json", "--probe", "sandbox",
		"--config", filepath.Join(preset, "development.toml"), "--bind", "workspace=" + ws, "--bind", "preset=" + preset}, h)
	var rep doctorReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("exit %d: not a report: %q %s", code, out.String(), errb.String())
	}
	sb, probe := namedCheck(rep, "sandbox"), namedCheck(rep, "probe.sandbox")
	if code != doctorCredential || sb.Status != "failed" || probe.Status != "skipped" || probe.Detail != "the sandbox check failed; no canary was run" {
		t.Fatalf("exit %d, sandbox %+v, probe %+v", code, sb, probe)
	}
	for _, c := range rep.Checks {
		if strings.HasPrefix(c.Name, "probe.sandbox.") {
			t.Fatalf("canary %s ran without a working bubblewrap", c.Name)
		}
	}
}
