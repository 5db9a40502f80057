package sandbox

import (
	"bytes"
	"runtime"
	"slices"
	"testing"

	"github.com/pabloagent/pablo/internal/ttycanary"
)

// injection is ttycanary.Program as a sandboxed command.
func injection(t *testing.T, l *Launcher) *Command {
	t.Helper()
	c, err := l.Command(Profile{}, Spec{Path: "/bin/sh", Args: []string{"/bin/sh", "-c", ttycanary.Program}, Env: []string{"PATH=/usr/bin:/bin"}, Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// runOnTerminal starts c's bubblewrap with a new pseudo-terminal as its
// controlling terminal, stdin and stdout, as a user's shell would start it
// were the host not to start each call in a session of its own; it
// returns the program's report and whether the terminal was typed into.
func runOnTerminal(t *testing.T, c *Command) (ttycanary.Report, bool) {
	t.Helper()
	tty, err := ttycanary.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	var stderr bytes.Buffer
	c.Cmd.Stderr = &stderr
	tty.Attach(c.Cmd)
	if err := c.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c.Started()
	_ = c.Cmd.Wait()
	if err := c.Finish(stderr.Bytes()); err != nil {
		t.Fatal(err)
	}
	rep, ok := ttycanary.ParseReport(stderr.Bytes())
	if !ok {
		t.Fatalf("the injection wrote no report: %q", stderr.String())
	}
	typed, err := tty.Typed()
	if err != nil {
		t.Fatal(err)
	}
	return rep, typed || rep.Typed()
}

// TestSandboxedCommandHasNoControllingTerminal: bubblewrap started with
// the user's terminal as its controlling terminal gives the command a
// session of its own (--new-session): the command cannot open /dev/tty,
// and its TIOCSTI into the terminal it holds as stdin and stdout reaches
// nothing.
func TestSandboxedCommandHasNoControllingTerminal(t *testing.T) {
	t.Parallel()
	l := needBwrap(t)
	rep, typed := runOnTerminal(t, injection(t, l))
	if typed || rep["tty"] != "open:ENXIO" || rep["fd0"] != "EPERM" || rep["fd1"] != "EPERM" {
		t.Fatalf("report %s, typed %v: want /dev/tty not to open (ENXIO), TIOCSTI refused and nothing typed", rep, typed)
	}
}

// TestSeccompFilterRefusesTIOCSTIOnTheControllingTerminal: the seccomp
// layer alone. With bubblewrap's --new-session taken out, the command
// keeps the terminal as its controlling terminal, where the kernel would
// let it type; the filter refuses TIOCSTI with EPERM on the terminal as
// stdin, stdout and /dev/tty, and nothing reaches the input queue.
func TestSeccompFilterRefusesTIOCSTIOnTheControllingTerminal(t *testing.T) {
	t.Parallel()
	l := needBwrap(t)
	if terminalABIs(runtime.GOARCH) == nil {
		t.Skip("no seccomp filter for this architecture")
	}
	c := injection(t, l)
	n := len(c.Cmd.Args)
	c.Cmd.Args = slices.DeleteFunc(c.Cmd.Args, func(a string) bool { return a == "--new-session" })
	if len(c.Cmd.Args) != n-1 {
		t.Fatalf("bubblewrap's arguments hold no --new-session: %q", c.Cmd.Args)
	}
	rep, typed := runOnTerminal(t, c)
	if typed || rep["fd0"] != "EPERM" || rep["fd1"] != "EPERM" || rep["tty"] != "EPERM" {
		t.Fatalf("report %s, typed %v: want TIOCSTI refused with EPERM on the controlling terminal and nothing typed", rep, typed)
	}
}

// TestSeccompFilterRefusesTerminalRequestsOnAnyDescriptor: a sandboxed
// command started as every call is (internal/proc) asks /dev/null for
// TIOCSTI, TIOCLINUX and TIOCSTI with bits set above the low 32: the
// kernel would answer ENOTTY (the control, unconfined, shows it); the
// filter answers EPERM before any descriptor is looked at.
func TestSeccompFilterRefusesTerminalRequestsOnAnyDescriptor(t *testing.T) {
	t.Parallel()
	l := needBwrap(t)
	if terminalABIs(runtime.GOARCH) == nil {
		t.Skip("no seccomp filter for this architecture")
	}
	for _, tc := range []struct {
		p    Profile
		want string
	}{{Profile{}, "EPERM"}, {Profile{Mode: Off}, "ENOTTY"}} {
		_, stderr, code, err := run(t, l, tc.p, t.TempDir(), ttycanary.Program)
		rep, ok := ttycanary.ParseReport([]byte(stderr))
		if err != nil || code != 0 || !ok {
			t.Fatalf("%s: code %d, err %v, stderr %q", tc.p, code, err, stderr)
		}
		for _, k := range []string{"fd0", "null", "linux", "high"} {
			if rep[k] != tc.want {
				t.Errorf("%s: %s=%s, want %s (report %s)", tc.p, k, rep[k], tc.want, rep)
			}
		}
	}
}
