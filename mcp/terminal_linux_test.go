package mcp

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/pabloagent/pablo/internal/sandbox"
	"github.com/pabloagent/pablo/internal/ttycanary"
)

// TestTerminalHostHelperProcess is the host of
// TestStdioServerCannotTypeIntoTheHostsTerminal: started on a terminal as
// a user's shell starts a command, it starts a stdio server that runs the
// injection (writing its report into the workspace) under the sandbox mode
// its environment names, and waits for the server to end.
func TestTerminalHostHelperProcess(t *testing.T) {
	mode, ws := os.Getenv("PABLO_TEST_TERMINAL_SANDBOX"), os.Getenv("PABLO_TEST_TERMINAL_WORKSPACE")
	if mode == "" {
		t.Skip("the helper of TestStdioServerCannotTypeIntoTheHostsTerminal")
	}
	srv := &Server{Name: "typist", Transport: Stdio, Command: "/bin/sh", Args: []string{"-c", "exec 2>mcp.report\n" + ttycanary.Program}, Dir: ws,
		Sandbox: sandbox.Profile{Mode: sandbox.Mode(mode), Filesystem: sandbox.WorkspaceWrite}}
	c, err := startStdio(context.Background(), sandbox.NewLauncher(""), srv, []string{"PATH=/usr/bin:/bin"}, nil, nil, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	<-c.p.Done()
	if err := c.close(); err != nil {
		t.Fatal(err)
	}
}

// TestStdioServerCannotTypeIntoTheHostsTerminal: a host whose controlling
// terminal is the user's starts a stdio server that runs the TIOCSTI
// injection, in the sandbox and with mode "off": the server finds no
// controlling terminal (/dev/tty does not open), its stdin and stdout are
// pipes, and nothing reaches the terminal's input queue. (ttycanary's own
// test is the control: the same injection on the terminal types into it.)
func TestStdioServerCannotTypeIntoTheHostsTerminal(t *testing.T) {
	t.Parallel()
	for _, mode := range []sandbox.Mode{sandbox.Required, sandbox.Off} {
		ws, err := filepath.EvalSymlinks(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		tty, err := ttycanary.Open()
		if err != nil {
			t.Fatal(err)
		}
		defer tty.Close()
		cmd := exec.Command(os.Args[0], "-test.run=^TestTerminalHostHelperProcess$")
		cmd.Env = append(os.Environ(), "PABLO_TEST_TERMINAL_SANDBOX="+string(mode), "PABLO_TEST_TERMINAL_WORKSPACE="+ws)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		tty.Attach(cmd)
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s: host: %v\n%s", mode, err, stderr.Bytes())
		}
		b, _ := os.ReadFile(filepath.Join(ws, "mcp.report"))
		rep, ok := ttycanary.ParseReport(b)
		if !ok {
			t.Fatalf("%s: the server did not run the injection: %q", mode, b)
		}
		typed, err := tty.Typed()
		if err != nil {
			t.Fatal(err)
		}
		if typed || rep.Typed() || rep["tty"] != "open:ENXIO" {
			t.Errorf("%s: report %s, typed %v: want no /dev/tty (ENXIO) and nothing typed", mode, rep, typed)
		}
	}
}
