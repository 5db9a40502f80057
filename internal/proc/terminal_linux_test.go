package proc_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/pabloagent/pablo/internal/proc"
	"github.com/pabloagent/pablo/internal/ttycanary"
)

// TestTerminalHostHelperProcess is the host of
// TestOwnedProcessHasNoControllingTerminal: started with a terminal as its
// controlling terminal, stdin and stdout, as a user's shell starts a
// command, it runs the injection as an owned process and writes the
// injection's report to its stderr.
func TestTerminalHostHelperProcess(t *testing.T) {
	if os.Getenv("PABLO_TEST_TERMINAL_HOST") == "" {
		t.Skip("the helper of TestOwnedProcessHasNoControllingTerminal")
	}
	p, err := proc.Start(context.Background(), exec.Command("/bin/sh", "-c", ttycanary.Program), proc.Options{MaxStderr: 1 << 16})
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Wait()
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(os.Stderr, "%s", res.Stderr)
}

// TestOwnedProcessHasNoControllingTerminal: a host whose controlling
// terminal is the user's starts a process (unsandboxed, as with sandbox
// mode "off"): the process leads a session of its own with stdin
// /dev/null, so it cannot open /dev/tty, holds no terminal, and types
// nothing into the user's terminal. (ttycanary's own test is the control:
// the same injection with the terminal types into it.)
func TestOwnedProcessHasNoControllingTerminal(t *testing.T) {
	t.Parallel()
	tty, err := ttycanary.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestTerminalHostHelperProcess$")
	cmd.Env = append(os.Environ(), "PABLO_TEST_TERMINAL_HOST=1")
	rep, typed, err := tty.Run(cmd)
	if err != nil {
		t.Fatalf("host: %v", err)
	}
	if typed || rep.Typed() || rep["tty"] != "open:ENXIO" || rep["fd0"] != "ENOTTY" {
		t.Fatalf("report %s, typed %v: want no /dev/tty (ENXIO), stdin not a terminal, nothing typed", rep, typed)
	}
}
