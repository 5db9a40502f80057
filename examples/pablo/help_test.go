package main

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryCommandAnswersHelp runs the built binary: every command and
// subcommand answers --help and -h with its synopsis and every flag, on
// stdout, exit 0, and never runs the command.
func TestEveryCommandAnswersHelp(t *testing.T) {
	pablo := builtPablo(t)
	for _, c := range commands() {
		for _, h := range []string{"--help", "-h"} {
			args := append(strings.Fields(c.path), h)
			code, out, errOut := pablo(args...)
			if code != 0 || errOut != "" {
				t.Errorf("pablo %s: exit %d, stderr %q", strings.Join(args, " "), code, errOut)
			}
			if !strings.HasPrefix(out, "usage: pablo "+c.path) {
				t.Errorf("pablo %s: stdout does not start with the synopsis: %q", strings.Join(args, " "), out)
			}
			for _, f := range c.allFlags() {
				if !strings.Contains(out, "  "+f.label()+" ") {
					t.Errorf("pablo %s: help lacks %s", strings.Join(args, " "), f.label())
				}
			}
			if strings.Contains(out, "FAIL") || strings.Contains(out, "pablo "+"0.") {
				t.Errorf("pablo %s ran the command: %q", strings.Join(args, " "), out)
			}
		}
	}
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}, {"config", "--help"}, {"ledger", "-h"}, {"help", "run"}} {
		if code, out, _ := pablo(args...); code != 0 || !strings.HasPrefix(out, "usage: pablo") {
			t.Errorf("pablo %s: exit %d, stdout %q", strings.Join(args, " "), code, out)
		}
	}
	if code, out, errOut := pablo("config"); code != 2 || out != "" || !strings.Contains(errOut, "validate") {
		t.Errorf("pablo config without a subcommand: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// builtPablo builds the binary and returns a function that runs it with
// args and returns its exit code, stdout and stderr.
func builtPablo(t *testing.T) func(args ...string) (int, string, string) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "pablo")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return func(args ...string) (int, string, string) {
		t.Helper()
		var out, errb bytes.Buffer
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, out.String(), errb.String()
	}
}

// builtFault builds the fault-injecting MCP server into dir.
func builtFault(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "fault")
	if out, err := exec.Command("go", "build", "-o", bin, "../mcpservers/fault").CombinedOutput(); err != nil {
		t.Fatalf("build the fault server: %v\n%s", err, out)
	}
	return bin
}

// TestNoArgumentsOffATerminalIsAUsageError runs the built binary with no
// arguments and no terminal: the usage goes to stderr and the exit is 2, so
// a script that forgot its command fails instead of passing.
func TestNoArgumentsOffATerminalIsAUsageError(t *testing.T) {
	code, out, errOut := builtPablo(t)()
	if code != 2 || out != "" || !strings.Contains(errOut, "pablo needs a command") || !strings.Contains(errOut, "usage: pablo") {
		t.Fatalf("pablo with no arguments: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
