//go:build linux

package shell

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/pabloagent/pablo/internal/sandbox"
	"github.com/pabloagent/pablo/internal/ttycanary"
)

// TestTerminalHostHelperProcess is the host of
// TestShellRunCannotTypeIntoTheHostsTerminal: started on a terminal as a
// user's shell starts a command, it runs the injection through shell.run
// under the profile its environment names and writes the command's
// stderr (the injection's report) to its own.
func TestTerminalHostHelperProcess(t *testing.T) {
	mode := os.Getenv("PABLO_TEST_TERMINAL_SANDBOX")
	if mode == "" {
		t.Skip("the helper of TestShellRunCannotTypeIntoTheHostsTerminal")
	}
	r, _ := newRunner(t, Options{Sandbox: sandbox.Profile{Mode: sandbox.Mode(mode)}})
	res, err := r.Run(context.Background(), Request{Command: ttycanary.Program, Cwd: "."})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprint(os.Stderr, res.Stderr)
}

// TestShellRunCannotTypeIntoTheHostsTerminal: a host whose controlling
// terminal is the user's runs shell.run of the TIOCSTI injection, in the
// sandbox and with mode "off": the command finds no controlling terminal
// (/dev/tty does not open), its stdin is not a terminal, and nothing
// reaches the terminal's input queue. (ttycanary's own test is the
// control: the same injection on the terminal types into it.)
func TestShellRunCannotTypeIntoTheHostsTerminal(t *testing.T) {
	t.Parallel()
	for _, mode := range []sandbox.Mode{sandbox.Required, sandbox.Off} {
		tty, err := ttycanary.Open()
		if err != nil {
			t.Fatal(err)
		}
		defer tty.Close()
		cmd := exec.Command(os.Args[0], "-test.run=^TestTerminalHostHelperProcess$")
		cmd.Env = append(os.Environ(), "PABLO_TEST_TERMINAL_SANDBOX="+string(mode))
		rep, typed, err := tty.Run(cmd)
		if err != nil {
			t.Fatalf("%s: host: %v", mode, err)
		}
		if typed || rep.Typed() || rep["tty"] != "open:ENXIO" || !strings.HasPrefix(rep["fd0"], "E") {
			t.Errorf("%s: report %s, typed %v: want no /dev/tty (ENXIO), stdin not a terminal, nothing typed", mode, rep, typed)
		}
	}
}
