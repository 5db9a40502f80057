package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTaskAsFirstWordIsShorthandForRun: `pablo "TASK" FLAGS` is `pablo
// run "TASK" FLAGS`, flags before the task included.
func TestTaskAsFirstWordIsShorthandForRun(t *testing.T) {
	script := filepath.Join(t.TempDir(), "script.json")
	os.WriteFile(script, []byte(`{"turns":[{"text":["scripted answer"]}]}`), 0o600)
	for _, args := range [][]string{
		{"say something", "--json", "--no-shell", "--script", script, "--workspace", t.TempDir()},
		{"--json", "--script", script, "--workspace", t.TempDir(), "say something"},
	} {
		code, stdout, stderr := cli(t, args...)
		var obj struct {
			Outcome struct {
				Status string `json:"status"`
				Output string `json:"output"`
			} `json:"outcome"`
		}
		if code != 0 || json.Unmarshal([]byte(stdout), &obj) != nil || obj.Outcome.Output != "scripted answer" {
			t.Fatalf("%q: exit %d, stdout %s, stderr %s", args, code, stdout, stderr)
		}
	}
}

// TestOneWordTaskNearACommandIsRefused: a typo of a command never
// becomes a model call; the message names the command and how to run
// such a task.
func TestOneWordTaskNearACommandIsRefused(t *testing.T) {
	code, stdout, stderr := cli(t, "doctr")
	if code != 2 || stdout != "" || !strings.Contains(stderr, `did you mean "doctor"`) || !strings.Contains(stderr, `pablo run "doctr"`) {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	code, _, stderr = cli(t, "--frobnicate", "task")
	if code != 2 || !strings.Contains(stderr, "unknown flag --frobnicate") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
}

// TestDemoWritesATraceWithContentOnRequest: demo --trace writes the
// native trace; --capture-content adds content and needs --trace.
func TestDemoWritesATraceWithContentOnRequest(t *testing.T) {
	dir := t.TempDir()
	plain, full := filepath.Join(dir, "plain.jsonl"), filepath.Join(dir, "full.jsonl")
	if code, _, stderr := cli(t, "demo", "--json", "--trace", plain); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if code, _, stderr := cli(t, "demo", "--json", "--trace", full, "--capture-content"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	p, _ := os.ReadFile(plain)
	f, _ := os.ReadFile(full)
	if len(p) == 0 || strings.Contains(string(p), "INV-1042") {
		t.Fatalf("the trace without --capture-content holds content, or none was written (%d bytes)", len(p))
	}
	if !strings.Contains(string(f), "INV-1042") {
		t.Fatalf("--capture-content wrote no content: %.400s", f)
	}
	if st, err := os.Stat(full); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("trace mode %v (%v)", st.Mode(), err)
	}
	code, _, stderr := cli(t, "demo", "--capture-content")
	if code != 2 || !strings.Contains(stderr, "--capture-content needs --trace PATH") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
}
