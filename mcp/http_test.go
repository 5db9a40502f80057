package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pabloagent/pablo/ledger/outcome"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/ledger"
)

// startEverythingHTTP runs server-everything's Streamable HTTP transport on
// a port the kernel picks and returns its endpoint. (A port picked here
// and released for the server to take could be taken by another process
// meanwhile.)
func startEverythingHTTP(t *testing.T, p peers) string {
	t.Helper()
	cmd := exec.Command(p.node, p.everything, "streamableHttp")
	cmd.Env = []string{"PORT=0"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		ok := false
		for sc.Scan() {
			if !ok && strings.Contains(sc.Text(), "listening on port") {
				ok = true
				ready <- true
			}
		}
		if !ok {
			ready <- false
		}
	}()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatal("server-everything did not start")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("server-everything did not start within 20 s")
	}
	port := listeningPort(cmd.Process.Pid)
	if port == 0 {
		t.Fatal("server-everything said it listens, but holds no listening socket")
	}
	return "http://127.0.0.1:" + strconv.Itoa(port) + "/mcp"
}

// listeningPort returns the TCP port process pid listens on, 0 if none:
// its sockets' inodes, from /proc/PID/fd, looked up among the listening
// sockets of /proc/net/tcp and tcp6.
func listeningPort(pid int) int {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd/"
	fds, _ := os.ReadDir(dir)
	inodes := map[string]bool{}
	for _, fd := range fds {
		link, _ := os.Readlink(dir + fd.Name())
		if inode, ok := strings.CutPrefix(link, "socket:["); ok {
			inodes[strings.TrimSuffix(inode, "]")] = true
		}
	}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, _ := os.ReadFile(table)
		for _, line := range strings.Split(string(b), "\n") {
			// sl local_address rem_address st ... uid timeout inode
			f := strings.Fields(line)
			if len(f) < 10 || f[3] != "0A" || !inodes[f[9]] {
				continue
			}
			_, hex, _ := strings.Cut(f[1], ":")
			if port, err := strconv.ParseUint(hex, 16, 16); err == nil {
				return int(port)
			}
		}
	}
	return 0
}

func TestEverythingStreamableHTTP(t *testing.T) {
	p := needPeers(t)
	url := startEverythingHTTP(t, p)
	srv := Server{Name: "everything", Transport: HTTP, URL: url, Required: true, StartupTimeout: 10 * time.Second, OperationTimeout: 10 * time.Second}
	layers := []authority.Layer{{ID: "ops", Kind: authority.KindPolicy, Dimensions: map[authority.Dimension]*authority.Rules{
		authority.DimMCPTools: {Default: authority.Allow, Deny: []authority.Rule{{ID: "ops.no-env", Value: "mcp/everything/get-env"}}},
	}}}
	c := open(t, Options{Servers: []Server{srv}, Authority: policy(t, layers, srv), AllowLoopbackHTTP: true})
	h := c.Health()[0]
	if h.Version != ProtocolVersion {
		t.Fatalf("version %q", h.Version)
	}
	ctx := context.Background()
	t.Run("DeniedToolIsNotListed", func(t *testing.T) {
		for _, s := range c.Tools() {
			if s.ID == "mcp/everything/get-env" {
				t.Fatal("a denied tool is listed")
			}
		}
		for _, ts := range h.Tools {
			if ts.Name == "get-env" && (ts.Admitted || ts.RuleID != "ops.no-env") {
				t.Fatalf("status %+v", ts)
			}
		}
		if _, err := c.CallTool(ctx, "mcp/everything/get-env", nil); !errors.Is(err, authority.ErrUnknownTool) {
			t.Fatalf("calling a denied tool: %v", err)
		}
	})
	t.Run("TextResult", func(t *testing.T) {
		res, err := c.CallTool(ctx, "mcp/everything/get-sum", json.RawMessage(`{"a":2,"b":3}`))
		if err != nil || !strings.Contains(strings.Join(res.Text, ""), "5") {
			t.Fatalf("%+v %v", res, err)
		}
	})
	t.Run("StructuredResult", func(t *testing.T) {
		res, err := c.CallTool(ctx, "mcp/everything/get-structured-content", json.RawMessage(`{"location":"New York"}`))
		if err != nil || res.Structured == nil {
			t.Fatalf("%+v %v", res, err)
		}
	})
	t.Run("ImageFailsExplicitly", func(t *testing.T) {
		_, err := c.CallTool(ctx, "mcp/everything/get-tiny-image", nil)
		var ce *ContentError
		if !errors.As(err, &ce) || ce.Type != "image" {
			t.Fatalf("%v", err)
		}
	})
	t.Run("Progress", func(t *testing.T) {
		res, err := c.CallTool(ctx, "mcp/everything/trigger-long-running-operation", json.RawMessage(`{"duration":0.3,"steps":3}`))
		if err != nil || res.Progress < 1 {
			t.Fatalf("%+v %v", res, err)
		}
	})
	t.Run("Cancellation", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		done := make(chan ledger.ToolResult)
		go func() {
			done <- c.Call(cctx, authority.Call{ID: "x", Tool: "mcp/everything/trigger-long-running-operation", Arguments: json.RawMessage(`{"duration":30,"steps":30}`)})
		}()
		waitProgress(t, c, "everything")
		cancel()
		if r := <-done; r.Status != outcome.ToolCancelled || r.Delivery != outcome.MayHaveBeenSent {
			t.Fatalf("%+v", r)
		}
		if _, err := c.CallTool(ctx, "mcp/everything/echo", json.RawMessage(`{"message":"after"}`)); err != nil {
			t.Fatal(err)
		}
	})
}

// recorder is an in-process Streamable HTTP server built with mcp-go's
// server package, wrapped to record what reached it and to inject faults.
type recorder struct {
	mu       sync.Mutex
	requests []recorded
	// fault, when set, may answer a request instead of the server.
	fault func(w http.ResponseWriter, r *http.Request, method string) bool
}

type recorded struct {
	verb, method, session, token, version string
}

func newRecorder(t *testing.T) (*recorder, *httptest.Server) {
	s := mcpserver.NewMCPServer("rec", "1.0.0", mcpserver.WithToolCapabilities(false))
	s.AddTool(mcpgo.NewTool("echo", mcpgo.WithString("message", mcpgo.Required())), func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultText("echo: " + req.GetString("message", "")), nil
	})
	s.AddTool(mcpgo.NewTool("sleep", mcpgo.WithNumber("ms", mcpgo.Required())), func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		select {
		case <-time.After(time.Duration(req.GetFloat("ms", 0)) * time.Millisecond):
			return mcpgo.NewToolResultText("slept"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	rec := &recorder{}
	h := mcpserver.NewStreamableHTTPServer(s)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		var msg struct {
			Method string `json:"method"`
		}
		json.Unmarshal(body, &msg)
		rec.mu.Lock()
		rec.requests = append(rec.requests, recorded{r.Method, msg.Method, r.Header.Get("Mcp-Session-Id"), r.Header.Get("X-Evidence-Token"), r.Header.Get("Mcp-Protocol-Version")})
		fault := rec.fault
		rec.mu.Unlock()
		if fault != nil && fault(w, r, msg.Method) {
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return rec, ts
}

func (r *recorder) seen() []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]recorded{}, r.requests...)
}

func httpServer(url string) Server {
	return Server{Name: "rec", Transport: HTTP, URL: url, Required: true, StartupTimeout: 5 * time.Second, OperationTimeout: 5 * time.Second}
}

func TestHeaderCredentialsGoOnlyToTheirServerAndOnDelete(t *testing.T) {
	t.Parallel()
	rec, ts := newRecorder(t)
	srv := httpServer(ts.URL + "/mcp")
	srv.Headers = map[string]string{"x-evidence-token": "evidence"}
	var dests []string
	resolve := func(_ context.Context, name string, consumer authority.Consumer, dest string) (authority.Secret, error) {
		dests = append(dests, name+"|"+string(consumer)+"|"+dest)
		return secretValue(t, "hdr-secret-value"), nil
	}
	c, err := Open(context.Background(), Options{Servers: []Server{srv}, Authority: allowAll(t, srv), Resolve: resolve, AllowLoopbackHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CallTool(context.Background(), "mcp/rec/echo", json.RawMessage(`{"message":"hi"}`)); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if len(dests) != 1 || dests[0] != "evidence|mcp.headers|mcp:rec:header:x-evidence-token" {
		t.Fatalf("resolution %v", dests)
	}
	got := rec.seen()
	sawDelete := false
	for i, r := range got {
		if r.token != "hdr-secret-value" {
			t.Errorf("request %d (%s %s) lacks the credential header", i, r.verb, r.method)
		}
		if i > 0 && r.session == "" {
			t.Errorf("request %d (%s %s) lost the session ID", i, r.verb, r.method)
		}
		if r.method == "tools/call" && r.version != ProtocolVersion {
			t.Errorf("tools/call sent protocol version %q", r.version)
		}
		sawDelete = sawDelete || r.verb == http.MethodDelete
	}
	if !sawDelete {
		t.Fatalf("no closing DELETE: %+v", got)
	}
}

func TestRedirectIsRefusedAndNamesTheTarget(t *testing.T) {
	t.Parallel()
	rec, ts := newRecorder(t)
	rec.fault = func(w http.ResponseWriter, r *http.Request, _ string) bool {
		http.Redirect(w, r, "https://elsewhere.example/mcp", http.StatusTemporaryRedirect)
		return true
	}
	srv := httpServer(ts.URL + "/mcp")
	_, err := Open(context.Background(), Options{Servers: []Server{srv}, Authority: allowAll(t, srv), AllowLoopbackHTTP: true})
	if !errors.Is(err, ErrRedirect) || !strings.Contains(err.Error(), "elsewhere.example") {
		t.Fatalf("want a refused redirect naming the target, got %v", err)
	}
	if n := len(rec.seen()); n != 1 {
		t.Fatalf("%d requests reached the server; the redirect must not be followed", n)
	}
}

func TestSessionNotFoundEndsTheSession(t *testing.T) {
	t.Parallel()
	rec, ts := newRecorder(t)
	srv := httpServer(ts.URL + "/mcp")
	c := open(t, Options{Servers: []Server{srv}, Authority: allowAll(t, srv), AllowLoopbackHTTP: true})
	rec.mu.Lock()
	rec.fault = func(w http.ResponseWriter, _ *http.Request, method string) bool {
		if method == "tools/call" {
			http.Error(w, "no such session", http.StatusNotFound)
			return true
		}
		return false
	}
	rec.mu.Unlock()
	r := c.Call(context.Background(), authority.Call{ID: "1", Tool: "mcp/rec/echo", Arguments: json.RawMessage(`{"message":"x"}`)})
	if r.Status != outcome.ToolIOFailed || r.Delivery != outcome.NotSent || !strings.Contains(string(mustJSON(r.Output)), "session_ended") {
		t.Fatalf("%+v", r)
	}
	if h := c.Health()[0]; h.State != Disabled {
		t.Fatalf("state %s", h.State)
	}
	before := len(rec.seen())
	_, err := c.CallTool(context.Background(), "mcp/rec/echo", json.RawMessage(`{"message":"x"}`))
	if !errors.Is(err, ErrSessionEnded) || len(rec.seen()) != before {
		t.Fatalf("a call went out on an ended session: %v", err)
	}
}

func TestLostResponseIsAnUnknownOutcomeNeverReplayed(t *testing.T) {
	t.Parallel()
	rec, ts := newRecorder(t)
	srv := httpServer(ts.URL + "/mcp")
	c := open(t, Options{Servers: []Server{srv}, Authority: allowAll(t, srv), AllowLoopbackHTTP: true})
	rec.mu.Lock()
	rec.fault = func(w http.ResponseWriter, _ *http.Request, method string) bool {
		if method != "tools/call" {
			return false
		}
		// The request arrived; the connection dies before any response.
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
		return true
	}
	rec.mu.Unlock()
	r := c.Call(context.Background(), authority.Call{ID: "1", Tool: "mcp/rec/echo", Arguments: json.RawMessage(`{"message":"x"}`)})
	if r.Status != outcome.ToolIOFailed || r.Delivery != outcome.MayHaveBeenSent || !r.Terminal() {
		t.Fatalf("%+v", r)
	}
	calls := 0
	for _, q := range rec.seen() {
		if q.method == "tools/call" {
			calls++
		}
	}
	if calls != 1 {
		t.Fatalf("tools/call reached the server %d times; it must never be replayed", calls)
	}
}

func TestCancellationSendsNotificationOverHTTP(t *testing.T) {
	t.Parallel()
	rec, ts := newRecorder(t)
	srv := httpServer(ts.URL + "/mcp")
	c := open(t, Options{Servers: []Server{srv}, Authority: allowAll(t, srv), AllowLoopbackHTTP: true})
	// The send is bounded (50 ms); a loaded host may take longer to open
	// the request's connection, and this test is about the send, not its
	// bound.
	c.servers[0].sess.cancelAllowance = time.Minute
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan ledger.ToolResult)
	go func() {
		done <- c.Call(ctx, authority.Call{ID: "1", Tool: "mcp/rec/sleep", Arguments: json.RawMessage(`{"ms":20000}`)})
	}()
	for i := 0; ; i++ {
		n := 0
		for _, q := range rec.seen() {
			if q.method == "tools/call" {
				n++
			}
		}
		if n > 0 {
			break
		}
		if i > 2000 {
			t.Fatal("tools/call never arrived")
		}
		sleepTick()
	}
	cancel()
	if r := <-done; r.Status != outcome.ToolCancelled || r.Delivery != outcome.MayHaveBeenSent {
		t.Fatalf("%+v", r)
	}
	found := false
	for _, q := range rec.seen() {
		found = found || q.method == "notifications/cancelled"
	}
	if !found {
		t.Fatalf("no notifications/cancelled: %+v", rec.seen())
	}
}

// A JSON-RPC error is the server's text: a credential it echoes is masked
// and its length bounded before the error reaches the host.
func TestJSONRPCErrorOfACallIsMaskedAndBounded(t *testing.T) {
	t.Parallel()
	rec, ts := newRecorder(t)
	srv := httpServer(ts.URL + "/mcp")
	srv.Headers = map[string]string{"x-evidence-token": "evidence"}
	resolve := func(context.Context, string, authority.Consumer, string) (authority.Secret, error) {
		return secretValue(t, "hdr-secret-value"), nil
	}
	c := open(t, Options{Servers: []Server{srv}, Authority: allowAll(t, srv), Resolve: resolve, AllowLoopbackHTTP: true})
	rec.mu.Lock()
	rec.fault = func(w http.ResponseWriter, r *http.Request, method string) bool {
		if method != "tools/call" {
			return false
		}
		var msg envelope
		body, _ := io.ReadAll(r.Body)
		json.Unmarshal(body, &msg)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(msg.ID)+`,"error":{"code":-32000,"message":"bad token hdr-secret-value `+strings.Repeat("pad ", 4096)+`"}}`)
		return true
	}
	rec.mu.Unlock()
	_, err := c.CallTool(context.Background(), "mcp/rec/echo", json.RawMessage(`{"message":"x"}`))
	var rpc *RPCError
	if !errors.As(err, &rpc) || rpc.Code != -32000 {
		t.Fatalf("%v", err)
	}
	if strings.Contains(rpc.Message, "hdr-secret-value") || strings.Contains(err.Error(), "hdr-secret-value") {
		t.Fatalf("the credential leaked: %.300q", rpc.Message)
	}
	if len(rpc.Message) > maxRPCMessage {
		t.Fatalf("message of %d bytes kept", len(rpc.Message))
	}
}

// A server's own text in an error (here the target of a refused redirect)
// is masked for suspected secrets even when the catalog resolved no
// credential: the error and the server's health reason hold no key.
func TestServerErrorTextMasksSuspectedSecretsWithNoKnownValue(t *testing.T) {
	t.Parallel()
	const key = "AKIAIOSFODNN7EXAMPLE"
	rec, ts := newRecorder(t)
	rec.fault = func(w http.ResponseWriter, r *http.Request, _ string) bool {
		// A long path puts the key where a shortened target would cut it.
		http.Redirect(w, r, "https://elsewhere.example/"+strings.Repeat("a", 255)+"?key="+key, http.StatusTemporaryRedirect)
		return true
	}
	srv := httpServer(ts.URL + "/mcp")
	srv.Required = false
	c, err := Open(context.Background(), Options{Servers: []Server{srv}, Authority: allowAll(t, srv), AllowLoopbackHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	h := c.Health()
	if len(h) != 1 || h[0].State != Failed || !strings.Contains(h[0].Reason, "elsewhere.example") {
		t.Fatalf("health %+v", h)
	}
	if strings.Contains(h[0].Reason, key[:8]) || strings.Contains(h[0].Reason, key[12:]) {
		t.Fatalf("the health reason holds the key: %s", h[0].Reason)
	}
}

// A server's error body is masked for suspected secrets before its snippet
// is shortened: a key the cut would split in two is masked whole.
func TestStatusErrorSnippetIsMaskedBeforeItIsShortened(t *testing.T) {
	t.Parallel()
	const key = "sk-proj-Ab3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF3hJ5kL7nP9rS1tV3x"
	rec, ts := newRecorder(t)
	rec.fault = func(w http.ResponseWriter, r *http.Request, _ string) bool {
		http.Error(w, strings.Repeat("x", 180)+" invalid key "+key, http.StatusUnauthorized)
		return true
	}
	srv := httpServer(ts.URL + "/mcp")
	srv.Required = false
	c, err := Open(context.Background(), Options{Servers: []Server{srv}, Authority: allowAll(t, srv), AllowLoopbackHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	h := c.Health()
	if len(h) != 1 || h[0].State != Failed || !strings.Contains(h[0].Reason, "HTTP 401") {
		t.Fatalf("health %+v", h)
	}
	if strings.Contains(h[0].Reason, key[:7]) {
		t.Fatalf("the health reason holds a piece of the key: %s", h[0].Reason)
	}
}
