package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pabloagent/pablo/authority"
)

// An npm or pip launcher is a script whose "#!" line runs its interpreter
// through env; in the server's cleared environment env would find nothing,
// so the interpreter is resolved to an absolute path at load and the
// script becomes its argument, env's options kept.
func TestShebangInterpreterIsResolvedAtLoad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := filepath.Join(dir, "server.js")
	os.WriteFile(script, []byte("#!/usr/bin/env -S node --no-warnings\nconsole.log(1)\n"), 0o755)
	lookPath := func(name string) (string, error) {
		if name == "node" {
			return "/opt/node/bin/node", nil
		}
		return "", errors.New("not found")
	}
	l, err := resolveLaunch(script, lookPath)
	if err != nil {
		t.Fatal(err)
	}
	if l.program != "/opt/node/bin/node" || !slices.Equal(l.pre, []string{"--no-warnings", script}) || !slices.Contains(l.show, "/opt/node/bin") {
		t.Fatalf("launch %+v", l)
	}
	os.WriteFile(script, []byte("#!/usr/bin/env deno\n"), 0o755)
	if _, err := resolveLaunch(script, lookPath); err == nil || !strings.Contains(err.Error(), "PATH has no deno") {
		t.Fatalf("err = %v, want the missing interpreter named", err)
	}
	// A direct interpreter, or no "#!" line, runs as configured.
	os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755)
	if l, err := resolveLaunch(script, lookPath); err != nil || l.program != script || len(l.pre) != 0 {
		t.Fatalf("launch %+v %v", l, err)
	}
}

// The sandbox shows a launcher's package root: the outermost
// node_modules above the .bin shim and its real file, and where the
// packages linked into it really live.
func TestPackageRootIsShownThroughSymlinks(t *testing.T) {
	t.Parallel()
	root, linked := t.TempDir(), t.TempDir()
	nm := filepath.Join(root, "node_modules")
	os.MkdirAll(filepath.Join(nm, ".bin"), 0o755)
	os.MkdirAll(filepath.Join(nm, "@scope", "server", "dist"), 0o755)
	os.WriteFile(filepath.Join(nm, "@scope", "server", "dist", "index.js"), []byte("#!/bin/sh\n"), 0o755)
	os.Symlink("../@scope/server/dist/index.js", filepath.Join(nm, ".bin", "server"))
	os.Symlink(linked, filepath.Join(nm, "@scope", "helper"))
	l, err := resolveLaunch(filepath.Join(nm, ".bin", "server"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(l.show, nm) || !slices.Contains(l.show, linked) {
		t.Fatalf("shown %v; want %s and %s", l.show, nm, linked)
	}
}

// A server that exits during startup is reported with its exit status and
// the end of its stderr, masked of the credentials it was given; when the
// sandbox hid a path it tried to open, the report names the path and the
// read_paths entry that would show it.
func TestServerExitingDuringStartupReportsStderrAndHiddenPath(t *testing.T) {
	t.Parallel()
	hidden := filepath.Join(t.TempDir(), "config.json")
	os.WriteFile(hidden, []byte("{}"), 0o644)
	script := filepath.Join(t.TempDir(), "server.sh")
	os.WriteFile(script, []byte("#!/bin/sh\necho \"starting with key $API_KEY\" >&2\ncat "+hidden+"\nexit 3\n"), 0o755)
	srv := Server{Name: "dying", Transport: Stdio, Command: script, Required: true, Env: map[string]string{"API_KEY": "key"},
		StartupTimeout: 20 * time.Second}
	resolve := func(context.Context, string, authority.Consumer, string) (authority.Secret, error) {
		return secretValue(t, "sk-test-0123456789abcdef"), nil
	}
	_, err := Open(context.Background(), Options{Servers: []Server{srv}, Authority: allowAll(t, srv), Resolve: resolve})
	if err == nil {
		t.Fatal("a server that exits opened")
	}
	msg := err.Error()
	for _, want := range []string{"exited during startup", "exit status 3", "starting with key", "the sandbox hides " + hidden, `read_paths entry "` + filepath.Dir(hidden) + `"`} {
		if !strings.Contains(msg, want) {
			t.Errorf("the report lacks %q: %s", want, msg)
		}
	}
	if strings.Contains(msg, "sk-test-0123456789abcdef") {
		t.Fatalf("the report holds the credential: %s", msg)
	}
}

// server-everything and server-filesystem, configured with the .bin shims
// npm installs and nothing else (no read_paths), start under the default
// sandbox and answer a call.
func TestNpmServersStartThroughTheirShimsUnderTheDefaultSandbox(t *testing.T) {
	p := needPeers(t)
	bin := filepath.Join(p.prefix, "node_modules", ".bin")
	work := t.TempDir()
	os.WriteFile(filepath.Join(work, "note.txt"), []byte("hello"), 0o644)
	for _, tc := range []struct {
		server Server
		tool   string
		args   string
		want   string
	}{
		{Server{Name: "everything", Command: filepath.Join(bin, "mcp-server-everything")}, "echo", `{"message":"shim"}`, "shim"},
		{Server{Name: "filesystem", Command: filepath.Join(bin, "mcp-server-filesystem"), Args: []string{work}, Dir: work}, "read_text_file", `{"path":"` + filepath.Join(work, "note.txt") + `"}`, "hello"},
	} {
		t.Run(tc.server.Name, func(t *testing.T) {
			t.Parallel()
			if _, err := os.Stat(tc.server.Command); err != nil {
				t.Fatalf("%s is not installed under %s (run sh scripts/install-peers.sh): %v", filepath.Base(tc.server.Command), p.prefix, err)
			}
			srv := tc.server
			srv.Transport, srv.Required, srv.StartupTimeout, srv.OperationTimeout = Stdio, true, 30*time.Second, 30*time.Second
			c := open(t, Options{Servers: []Server{srv}, Authority: allowAll(t, srv)})
			res, err := c.CallTool(context.Background(), authority.MCPTool(srv.Name, tc.tool), json.RawMessage(tc.args))
			if err != nil || !strings.Contains(strings.Join(res.Text, " "), tc.want) {
				t.Fatalf("%s: %+v %v", tc.tool, res, err)
			}
		})
	}
}
