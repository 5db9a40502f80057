package main

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// buildPablo builds the binary into dir and returns its path.
func buildPablo(t testing.TB, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "pablo")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// acpDeployment writes a deployment with a scripted model into dir and
// returns its path.
func acpDeployment(t testing.TB, dir, name, script, extra string) string {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name+".json"), []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, name+".toml")
	body := "schema_version = 1\n[options.model]\nprovider = \"script\"\nscript = { base = \"source\", path = \"" + name + ".json\" }\n" + extra
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// acpProcess is a `pablo acp --stdio` process driven over its real pipes
// by a minimal JSON-RPC client: the figures measure the binary, not a
// client library.
type acpProcess struct {
	cmd *exec.Cmd
	// stderr holds the process's diagnostics; read it after it exited.
	stderr bytes.Buffer
	in     io.WriteCloser
	out    *bufio.Reader
	next   int
}

func startACP(tb testing.TB, bin string, args ...string) *acpProcess {
	tb.Helper()
	cmd := exec.Command(bin, append([]string{"acp", "--stdio"}, args...)...)
	p := &acpProcess{cmd: cmd}
	cmd.Stderr = &p.stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	p.in, p.out = in, bufio.NewReaderSize(out, 1<<16)
	tb.Cleanup(func() { p.close() })
	return p
}

// call sends one request and reads frames until its response; it returns
// the result and how many notifications came before it.
func (p *acpProcess) call(method string, params any) (json.RawMessage, int, error) {
	p.next++
	id := p.next
	req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if _, err := p.in.Write(append(req, '\n')); err != nil {
		return nil, 0, err
	}
	notes := 0
	for {
		line, err := p.out.ReadBytes('\n')
		if err != nil {
			return nil, notes, fmt.Errorf("%s: reading the response: %w", method, err)
		}
		var msg struct {
			ID     *json.RawMessage `json:"id"`
			Method string           `json:"method"`
			Result json.RawMessage  `json:"result"`
			Error  json.RawMessage  `json:"error"`
		}
		if err := json.Unmarshal(line, &msg); err != nil {
			return nil, notes, fmt.Errorf("%s: a stdout line is not JSON: %q", method, line)
		}
		if msg.Method != "" {
			notes++
			continue
		}
		if msg.ID == nil || string(*msg.ID) != strconv.Itoa(id) {
			return nil, notes, fmt.Errorf("%s: a response to another request: %s", method, line)
		}
		if msg.Error != nil {
			return nil, notes, fmt.Errorf("%s: %s", method, msg.Error)
		}
		return msg.Result, notes, nil
	}
}

// session opens a session in cwd and returns its ID.
func (p *acpProcess) session(cwd string) (string, error) {
	res, _, err := p.call("session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}})
	if err != nil {
		return "", err
	}
	var r struct {
		SessionID string `json:"sessionId"`
	}
	err = json.Unmarshal(res, &r)
	return r.SessionID, err
}

// prompt sends one text prompt and returns its stop reason.
func (p *acpProcess) prompt(session, text string) (string, int, error) {
	res, notes, err := p.call("session/prompt", map[string]any{"sessionId": session, "prompt": []any{map[string]any{"type": "text", "text": text}}})
	if err != nil {
		return "", notes, err
	}
	var r struct {
		StopReason string `json:"stopReason"`
	}
	err = json.Unmarshal(res, &r)
	return r.StopReason, notes, err
}

// close ends stdin and waits for the process.
func (p *acpProcess) close() error {
	p.in.Close()
	return p.cmd.Wait()
}

// procStatus reads a kilobyte field of /proc/PID/status (VmRSS, VmHWM).
func procStatus(pid int, field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		}
	}
	return 0, fmt.Errorf("/proc/%d/status has no %s", pid, field)
}

// until reads frames until one satisfies match; every frame must be
// JSON-RPC 2.0.
func (p *acpProcess) until(match func(msg map[string]any) bool) (map[string]any, error) {
	for {
		line, err := p.out.ReadBytes('\n')
		if err != nil {
			return nil, err
		}
		var msg map[string]any
		if err := json.Unmarshal(line, &msg); err != nil || msg["jsonrpc"] != "2.0" {
			return nil, fmt.Errorf("a stdout line is not JSON-RPC 2.0: %q", line)
		}
		if match(msg) {
			return msg, nil
		}
	}
}

// send writes one frame as it is.
func (p *acpProcess) send(frame string) error {
	_, err := p.in.Write([]byte(frame + "\n"))
	return err
}

// processesRunning lists the processes whose command line is exactly
// command (the command itself, not the sandbox that starts it) or, with
// anywhere, holds it (the sandbox's bubblewrap processes too).
func processesRunning(command string, anywhere bool) []string {
	var out []string
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err != nil {
			continue
		}
		line := strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
		if line == command || (anywhere && strings.Contains(line, command)) {
			out = append(out, d.Name())
		}
	}
	return out
}

// exitCode waits for the process and returns its exit code.
func (p *acpProcess) exitCode() int {
	p.in.Close()
	err := p.cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// percentile is the q-quantile of samples (nearest rank below).
func percentile[T cmp.Ordered](samples []T, q float64) T {
	s := slices.Clone(samples)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1))]
}
