package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/pabloagent/pablo/internal/ttycanary"
)

// TestNoToolTypesIntoTheUsersTerminal: `pablo run`, started on a terminal
// as a user's shell starts it (the terminal its controlling terminal,
// stdin and stdout), runs a scripted model's shell.run of the TIOCSTI
// injection and a stdio MCP server that runs the same injection, with the
// sandbox required and with mode "off": each injection runs (its report
// is in the workspace), none finds a controlling terminal (/dev/tty does
// not open), and nothing reaches the terminal's input queue. The control
// runs the injection on such a terminal directly and types into it, so the
// check can see a keystroke that got through.
func TestNoToolTypesIntoTheUsersTerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("builds pablo and runs it on a pseudo-terminal")
	}
	dir := t.TempDir()
	bin := buildPablo(t, dir)
	for _, mode := range []string{"required", "off"} {
		t.Run("sandbox="+mode, func(t *testing.T) {
			ws := filepath.Join(dir, "work-"+mode)
			if err := os.Mkdir(ws, 0o700); err != nil {
				t.Fatal(err)
			}
			writeCanaryFile(t, filepath.Join(ws, "inject.sh"), ttycanary.Program)
			writeCanaryFile(t, filepath.Join(ws, "server.sh"), "exec 2>mcp.report\n"+ttycanary.Program)
			args, _ := json.Marshal(map[string]string{"command": "/bin/sh ./inject.sh 2>shell.report", "cwd": "."})
			writeCanaryFile(t, filepath.Join(dir, mode+".json"), `{"turns":[{"tool_calls":[{"name":"shell_run","arguments":`+string(args)+`}]},{"text":["done"]}]}`)
			cfg := filepath.Join(dir, mode+".toml")
			writeCanaryFile(t, cfg, "schema_version = 1\n[options.model]\nprovider = \"script\"\nscript = { base = \"source\", path = \""+mode+".json\" }\n"+
				"[options.filesystem]\nwrite = true\n[options.shell.sandbox]\nmode = \""+mode+"\"\n"+
				"[options.mcp.servers.typist]\ntransport = \"stdio\"\ncommand = \"/bin/sh\"\nargs = [\""+filepath.Join(ws, "server.sh")+"\"]\n"+
				"cwd = { base = \"workspace\", path = \".\" }\nrequired = false\n"+
				"[options.mcp.servers.typist.sandbox]\nmode = \""+mode+"\"\nfilesystem = \"workspace-write\"\n")

			tty, err := ttycanary.Open()
			if err != nil {
				t.Fatal(err)
			}
			defer tty.Close()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "run", "go", "--config", cfg, "--bind", "workspace="+ws, "--approve", "shell.run")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			tty.Attach(cmd)
			if err := cmd.Run(); err != nil {
				t.Fatalf("pablo run: %v\n%s\nterminal: %q", err, stderr.Bytes(), tty.Screen())
			}
			for _, name := range []string{"shell.report", "mcp.report"} {
				b, err := os.ReadFile(filepath.Join(ws, name))
				rep, ok := ttycanary.ParseReport(b)
				if err != nil || !ok {
					t.Fatalf("%s: the injection did not run (%v): %q\npablo: %s", name, err, b, stderr.Bytes())
				}
				if rep.Typed() || rep["tty"] != "open:ENXIO" {
					t.Errorf("%s: %s: want no controlling terminal and nothing typed", name, rep)
				}
			}
			if typed, err := tty.Typed(); err != nil || typed {
				n, _ := tty.Queued()
				t.Fatalf("the terminal was typed into (%v): %d bytes queued, screen %q", err, n, tty.Screen())
			}
		})
	}

	t.Run("control", func(t *testing.T) {
		tty, err := ttycanary.Open()
		if err != nil {
			t.Fatal(err)
		}
		defer tty.Close()
		rep, typed, err := tty.Run(exec.Command("/bin/sh", "-c", ttycanary.Program))
		if err != nil {
			t.Fatal(err)
		}
		if rep["fd0"] == "EIO" {
			t.Skipf("this kernel refuses TIOCSTI to everyone (%s): the control cannot type", rep)
		}
		if !typed {
			t.Fatalf("the control did not type into its terminal: %s", rep)
		}
	})
}

func writeCanaryFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
