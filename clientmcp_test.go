package pablo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/deployment"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/mcp"
)

// clientEverything is server-everything as an editor passes it: its own
// name, the node launcher, and an environment value of the user's.
func clientEverything(t *testing.T, secret string) SessionMCPServer {
	t.Helper()
	node, everything, ok := everythingPeer()
	if !ok {
		if os.Getenv("PABLO_SKIP_PEERS") == "1" {
			t.Skip("real-peer test skipped: PABLO_SKIP_PEERS=1")
		}
		t.Fatal("server-everything is not installed (run sh scripts/install-peers.sh or set PABLO_NPM_PREFIX)")
	}
	return SessionMCPServer{Name: "editor-everything", Command: node, Args: []string{everything, "stdio"}, Env: map[string]string{"EDITOR_TOKEN": secret}}
}

// clientMCPBody admits a client's servers, sandboxed with the npm prefix
// readable.
const clientMCPBody = "[options.interfaces.acp]\nclient_mcp_servers = true\n" +
	"[options.interfaces.acp.client_mcp_sandbox]\nread_paths = [{ base = \"binding\", name = \"npm\", path = \".\" }]\n"

// runClientMCP runs one task on d with the client's server added, its
// model calling get-env, and returns its task object, its events and its
// store.
func runClientMCP(t *testing.T, body string, srv SessionMCPServer) (*TaskObject, []event.Event, *ledger.MemoryStore) {
	t.Helper()
	dir := t.TempDir()
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	tool := mcp.Alias(authority.MCPTool(srv.Name, "get-env"))
	script := `{"turns":[{"tool_calls":[{"id":"c1","name":"` + tool + `","arguments":{}}]},{"text":["done"]}]}`
	d := scriptDeployment(t, dir, ws, script, "[options.shell]\nenabled = false\n"+body)
	d, err := d.WithClientMCPServers([]SessionMCPServer{srv})
	if err != nil {
		t.Fatal(err)
	}
	store := ledger.NewMemoryStore()
	rt, err := d.NewRuntime(context.Background(), HostOptions{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	obj, events := runTask(t, rt, "Which environment does the server see?")
	return obj, events, store
}

// A client's stdio server runs as a configured one, sandboxed, with the
// client's environment value; the value is masked in every event and
// record, and never in the configuration the runtime records.
func TestClientMCPServerRunsWithItsEnvMasked(t *testing.T) {
	const secret = "editor-token-4b1d9c2e7f"
	obj, events, store := runClientMCP(t, clientMCPBody, clientEverything(t, secret))
	if obj.Outcome == nil || obj.Outcome.Status != event.StatusCompleted {
		b, _ := json.Marshal(obj)
		t.Fatalf("outcome %s", b)
	}
	var result json.RawMessage
	for _, ev := range events {
		if ev.Type == event.ToolFinished {
			result = ev.Result
		}
		if b, _ := json.Marshal(ev); bytes.Contains(b, []byte(secret)) {
			t.Fatalf("the client's value in an event: %s", b)
		}
	}
	if !strings.Contains(string(result), "EDITOR_TOKEN") || !strings.Contains(string(result), `"status":"completed"`) {
		t.Fatalf("get-env did not see the client's variable: %s", result)
	}
	recs, err := store.Records(context.Background(), *obj.RunID)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if b, _ := json.Marshal(r); bytes.Contains(b, []byte(secret)) {
			t.Fatalf("the client's value in a ledger record: %s", b)
		}
	}
}

// An [[authority]] layer bounds a client's servers as it bounds configured
// ones: a layer that denies the server by name leaves none of its tools.
func TestAuthorityLayerForbidsAClientMCPServer(t *testing.T) {
	layer := "[[authority]]\nid = \"ops\"\n[authority.mcp.servers]\ndefault = \"allow\"\ndeny = [{ id = \"ops.no-editor-servers\", value = \"editor-everything\" }]\n"
	obj, _, _ := runClientMCP(t, clientMCPBody+layer, clientEverything(t, "v"))
	if obj.Outcome == nil || obj.Outcome.Status != event.StatusPolicyDenied {
		b, _ := json.Marshal(obj)
		t.Fatalf("a call to a forbidden client server: %s", b)
	}
}

// Off (the default), a deployment refuses a client's servers with an error
// that names the key that admits them.
func TestClientMCPServersAreOffByDefault(t *testing.T) {
	dir := t.TempDir()
	d := scriptDeployment(t, dir, dir, `{"turns":[{"text":["x"]}]}`, "")
	_, err := d.WithClientMCPServers([]SessionMCPServer{{Name: "mine", Command: "/usr/bin/true"}})
	var ce *deployment.Error
	if !errors.As(err, &ce) || ce.Option != "/options/interfaces/acp/client_mcp_servers" || !strings.Contains(ce.Message, "client_mcp_servers = true") {
		t.Fatalf("err %v, want a *deployment.Error naming options.interfaces.acp.client_mcp_servers", err)
	}
	s, err := NewSessions(SessionOptions{Runtime: func(context.Context) (*Runtime, error) { return nil, errors.New("unused") }})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.New(context.Background(), SessionRequest{Cwd: dir, MCPServers: []SessionMCPServer{{Name: "mine", Command: "/usr/bin/true", Env: map[string]string{"K": "v"}}}})
	var se *SessionError
	if !errors.As(err, &se) || se.Code != SessionInvalid || !strings.Contains(se.Message, "options.interfaces.acp.client_mcp_servers") {
		t.Fatalf("session/new with a client's server: %v", err)
	}
}

// A client's stdio server runs in options.interfaces.acp.client_mcp_sandbox
// (mode, filesystem, network, read_paths), narrowed by every authority
// layer's mcp.sandbox ceiling as a configured server's sandbox is; an HTTP
// server has none.
func TestClientMCPSandboxIsNarrowedByTheLayers(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "tools"), 0o700)
	body := "[options.interfaces.acp]\nclient_mcp_servers = true\n" +
		"[options.interfaces.acp.client_mcp_sandbox]\nmode = \"required\"\nfilesystem = \"workspace-write\"\nnetwork = \"allow\"\nread_paths = [{ base = \"workspace\", path = \"tools\" }]\n" +
		"[[authority]]\nid = \"ops\"\n[authority.mcp.sandbox]\nnetwork = \"deny\"\n"
	d := scriptDeployment(t, dir, dir, `{"turns":[{"text":["x"]}]}`, body)
	d, err := d.WithClientMCPServers([]SessionMCPServer{{Name: "mine", Command: "/usr/bin/true"}, {Name: "remote", URL: "https://mcp.example.test/mcp"}})
	if err != nil {
		t.Fatal(err)
	}
	opts, err := d.MCPOptions(HostOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]mcp.Server{}
	for _, s := range opts.Servers {
		got[s.Name] = s
	}
	sb := got["mine"].Sandbox
	if sb.Mode != "required" || sb.Filesystem != "workspace-write" || sb.Network != "deny" || len(sb.ReadPaths) != 1 || sb.ReadPaths[0] != filepath.Join(dir, "tools") {
		t.Errorf("the client's stdio server runs in %+v", sb)
	}
	if got["mine"].Dir != dir {
		t.Errorf("the client's stdio server runs in %q, want the workspace %q", got["mine"].Dir, dir)
	}
	if r := got["remote"]; r.Transport != mcp.HTTP || r.URL != "https://mcp.example.test/mcp" {
		t.Errorf("the client's HTTP server is %+v", r)
	}
}

// The editor's development preset admits a client's MCP servers; the
// development, base and locked production presets do not.
func TestClientMCPServersOnlyInTheEditorPreset(t *testing.T) {
	presets, _ := filepath.Abs("presets")
	ws := t.TempDir()
	for name, want := range map[string]bool{"development-acp.toml": true, "development.toml": false, "base.toml": false, "production.toml": false} {
		d, err := Load(LoadOptions{Config: filepath.Join(presets, name), Bindings: map[string]string{"workspace": ws, "preset": presets}})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := d.Options().Interfaces.ACP.ClientMCPServers; got != want {
			t.Errorf("%s: client_mcp_servers %v, want %v", name, got, want)
		}
		_, err = d.WithClientMCPServers([]SessionMCPServer{{Name: "mine", Command: "/usr/bin/true"}})
		if (err == nil) != want {
			t.Errorf("%s: WithClientMCPServers: %v", name, err)
		}
	}
}

// A client's value is handed out only for its own server and variable,
// and becomes a known secret (masked everywhere) before it is: another
// server naming its reserved credential gets nothing.
func TestClientValuesGoOnlyToTheirServerAndVariable(t *testing.T) {
	dir := t.TempDir()
	d := scriptDeployment(t, dir, dir, `{"turns":[{"text":["x"]}]}`, "[options.interfaces.acp]\nclient_mcp_servers = true\n")
	d, err := d.WithClientMCPServers([]SessionMCPServer{
		{Name: "a", Command: "/usr/bin/true", Env: map[string]string{"TOKEN": "value-of-a"}},
		{Name: "b", Command: "/usr/bin/true", Env: map[string]string{"TOKEN": "value-of-b"}, Headers: nil},
	})
	if err != nil {
		t.Fatal(err)
	}
	var known []string
	resolve := d.clientResolve(func(context.Context, string, authority.Consumer, string) (authority.Secret, error) {
		return authority.Secret{}, errors.New("not a client's credential")
	}, func(v string) { known = append(known, v) })
	ctx := context.Background()
	ref := d.c.Options.MCP.Servers["a"].Env["TOKEN"]
	if sec, err := resolve(ctx, ref, authority.ConsumerMCPEnv, "mcp:a:env:TOKEN"); err != nil || sec.Reveal() != "value-of-a" {
		t.Fatalf("a's own value: %v", err)
	}
	if len(known) != 1 || known[0] != "value-of-a" {
		t.Fatalf("the value was handed out before it was a known secret: %v", known)
	}
	for _, dest := range []string{"mcp:b:env:TOKEN", "mcp:a:env:OTHER", "mcp:a:header:TOKEN"} {
		if _, err := resolve(ctx, ref, authority.ConsumerMCPEnv, dest); err == nil {
			t.Errorf("a's value was handed to %s", dest)
		}
	}
	if strings.Contains(ref, "value-of-a") || strings.Contains(d.c.Fingerprint, "value") {
		t.Fatalf("the value is in the configuration: %q", ref)
	}
	if b, _ := json.Marshal(d.Options()); bytes.Contains(b, []byte("value-of")) {
		t.Fatalf("the value is in the deployment's options: %s", b)
	}
}
