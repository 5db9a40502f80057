package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// readmeExitCodes parses the README's table of the exit codes `pablo
// doctor` and `pablo mcp probe` share.
func readmeExitCodes(t *testing.T) map[int]string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "`pablo doctor` and `pablo mcp probe` exit with the code of the first failing check:")
	if !ok {
		t.Fatal("the README has no exit-code table for pablo doctor and pablo mcp probe")
	}
	codes := map[int]string{}
	sc := bufio.NewScanner(strings.NewReader(table))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" && len(codes) > 0 {
			break
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 2 {
			continue
		}
		if n, err := strconv.Atoi(strings.TrimSpace(cells[0])); err == nil {
			codes[n] = strings.TrimSpace(cells[1])
		}
	}
	if len(codes) < 8 {
		t.Fatalf("the README's exit-code table has %d rows", len(codes))
	}
	return codes
}

// TestMCPProbeExitsAsDoctorForEveryServerState: for every state a server
// can end a probe in (ready, denied by a server policy, every tool
// denied, failed to start, unhealthy framing, an unsupported protocol
// version, a pinned tool whose definition changed, a credential missing),
// the built binary's `pablo mcp probe` exits with the code `pablo doctor
// --probe mcp` gives the same deployment, and the README's table names
// that code's cause. A required server's failure sets it; an optional
// server's failure sets nothing: both commands exit 0.
func TestMCPProbeExitsAsDoctorForEveryServerState(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "pablo")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	fault := builtFault(t, dir)
	readme := readmeExitCodes(t)
	run := func(args ...string) (int, string) {
		var out bytes.Buffer
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "LOCAL_KEY=k-123456")
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), out.String()
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, out.String()
	}
	server := func(mode string, required bool, extra string) string {
		return chatModel + `[options.mcp.servers.records]
transport = "stdio"
command = "` + fault + `"
args = ["-mode", "` + mode + `"]
startup_timeout_ms = 30000
required = ` + strconv.FormatBool(required) + "\n" + extra
	}
	states := []struct {
		name, mode, extra string
		exit              int    // for a required server
		cause             string // what the README says of exit
	}{
		{"Ready", "ok", "", 0, "every check passed"},
		{"DeniedByServerPolicy", "ok", "[[options.mcp.policies]]\nservers = { default = \"deny\" }\n", 7, "policy denies"},
		{"EveryToolDenied", "ok", "[options.policy.tools]\ndefault = \"allow\"\nallow = [{ id = \"only.fs\", value = \"fs.read\" }]\n", 7, "policy denies"},
		{"FailedToStart", "exit", "", 6, "failed to start"},
		{"UnhealthyFraming", "garbage", "", 6, "negotiate"},
		{"VersionUnsupported", "version", "", 6, "protocol version"},
		{"PinMismatch", "ok", "pins = { echo = \"sha256:" + strings.Repeat("0", 64) + "\" }\n", 6, "pinned tool"},
		{"CredentialMissing", "ok", "env = { PABLO_TEST_TOKEN = \"records\" }\n[credentials.records]\nconsumer = \"mcp.env\"\nsources = [{ kind = \"environment\", name = \"PABLO_TEST_ABSENT_TOKEN\" }]\n", 3, "credential is missing"},
	}
	for _, st := range states {
		for _, required := range []bool{true, false} {
			name := st.name + "/Required"
			want := st.exit
			if !required {
				name, want = st.name+"/Optional", 0
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				cfg, ws := writeConfig(t, server(st.mode, required, st.extra))
				doctor, dout := run("doctor", "--config", cfg, "--bind", "workspace="+ws, "--probe", "mcp")
				probe, pout := run("mcp", "probe", "--config", cfg, "--bind", "workspace="+ws)
				if probe != doctor || probe != want {
					t.Fatalf("mcp probe exit %d, doctor exit %d, want %d\nmcp probe:\n%s\ndoctor:\n%s", probe, doctor, want, pout, dout)
				}
				if required && !strings.Contains(readme[want], st.cause) {
					t.Errorf("the README says exit %d is %q; want it to name %q", want, readme[want], st.cause)
				}
			})
		}
	}
}
