package pablo

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/ledger"

	"github.com/pabloagent/pablo/mcp"
)

// TestDeploymentOAuthServerGetsItsTokenThroughTheHostStore: a deployment's
// options.mcp.servers.NAME.oauth (grant, client ID, client secret
// credential, scopes) reach the catalog, the token goes to that server,
// the grant lands in the host's token store (HostOptions.MCPTokens), and
// the client secret is resolved for consumer mcp.oauth at its destination
// only.
func TestDeploymentOAuthServerGetsItsTokenThroughTheHostStore(t *testing.T) {
	t.Parallel()
	f := newOAuthServer(t)
	rs := f.rs
	dir := t.TempDir()
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	cfg := filepath.Join(dir, "deployment.toml")
	os.WriteFile(cfg, []byte("schema_version = 1\n"+f.oauthTOML()), 0o600)
	d, err := Load(LoadOptions{Config: cfg, Bindings: map[string]string{"workspace": ws}, LoopbackHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	tokens := &mcp.MemoryTokenStore{}
	opts, err := d.MCPOptions(HostOptions{MCPTokens: tokens, LookupEnv: func(k string) (string, bool) {
		return "client-secret-value", k == "RECORDS_CLIENT_SECRET"
	}})
	if err != nil {
		t.Fatal(err)
	}
	cat, err := mcp.Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	res, err := cat.CallTool(context.Background(), "mcp/records/ping", json.RawMessage(`{}`))
	if err != nil || strings.Join(res.Text, "") != "pong" {
		t.Fatalf("ping: %+v %v", res, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	tokenForm, tokenAuth := f.tokenForm, f.tokenAuth
	if !strings.Contains(tokenForm, "grant_type=client_credentials") || !strings.Contains(tokenForm, "scope=records%3Aread+records%3Alist") ||
		!strings.HasPrefix(tokenAuth, "Basic ") {
		t.Fatalf("token request %q (auth %q)", tokenForm, tokenAuth)
	}
	if g, ok, _ := tokens.Load(context.Background(), mcp.TokenKey{Server: "records", Resource: rs.URL + "/mcp"}); !ok || g.AccessToken != "deployment-token-value" || g.ClientSecret != "" {
		t.Fatalf("the host's store holds %v (%v); a configured secret is never copied into it", g, ok)
	}
}

// oauthServer is a protected MCP server (mcp-go's, behind a bearer check)
// and an authorization server that grants client credentials.
type oauthServer struct {
	rs, as               *httptest.Server
	mu                   sync.Mutex
	tokenForm, tokenAuth string
}

func newOAuthServer(t *testing.T) *oauthServer {
	f := &oauthServer{}
	s := mcpserver.NewMCPServer("protected", "1.0.0", mcpserver.WithToolCapabilities(false))
	s.AddTool(mcpgo.NewTool("ping"), func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultText("pong"), nil
	})
	// whoami echoes the credential it was called with, as a careless
	// server's diagnostics would.
	s.AddTool(mcpgo.NewTool("whoami"), func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultText("called with " + req.Header.Get("Authorization")), nil
	})
	h := mcpserver.NewStreamableHTTPServer(s)
	f.as = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server":
			json.NewEncoder(w).Encode(map[string]any{"issuer": f.as.URL, "token_endpoint": f.as.URL + "/token", "grant_types_supported": []string{"client_credentials"}})
		case "/token":
			r.ParseForm()
			f.mu.Lock()
			f.tokenForm, f.tokenAuth = r.PostForm.Encode(), r.Header.Get("Authorization")
			f.mu.Unlock()
			json.NewEncoder(w).Encode(map[string]any{"access_token": "deployment-token-value", "token_type": "Bearer", "expires_in": 3600})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(f.as.Close)
	f.rs = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/.well-known/oauth-protected-resource/mcp" {
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"resource": f.rs.URL + "/mcp", "authorization_servers": []string{f.as.URL}})
			return
		}
		if r.Header.Get("Authorization") != "Bearer deployment-token-value" {
			w.Header().Set("WWW-Authenticate", `Bearer scope="records:read"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(f.rs.Close)
	return f
}

// oauthTOML configures the fixture as server "records" with client
// credentials.
func (f *oauthServer) oauthTOML() string {
	return `[credentials.records_oauth]
consumer = "mcp.oauth"
sources = [{ kind = "environment", name = "RECORDS_CLIENT_SECRET" }]
[options.mcp.servers.records]
transport = "http"
url = "` + f.rs.URL + `/mcp"
required = true
oauth = { grant = "client_credentials", client_id = "pablo-records", client_secret = "records_oauth", scopes = ["records:read", "records:list"] }
`
}

// TestOAuthTokenIsInNoTaskRecord: a task whose tools come from an OAuth
// server, one of which echoes the token it was called with, keeps the
// token out of its events, its ledger and its spans.
func TestOAuthTokenIsInNoTaskRecord(t *testing.T) {
	t.Parallel()
	f := newOAuthServer(t)
	script := `{"turns":[{"text":["Checking."],"tool_calls":[{"name":"` + mcp.Alias("mcp/records/whoami") + `","arguments":{}},{"name":"` + mcp.Alias("mcp/records/ping") + `","arguments":{}}]},{"text":["Done."]}]}`
	spans := tracetest.NewSpanRecorder()
	tracer := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)).Tracer("test")
	dir := t.TempDir()
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	os.WriteFile(filepath.Join(dir, "script.json"), []byte(script), 0o600)
	doc := "schema_version = 1\n" + f.oauthTOML() + "[options.model]\nprovider = \"script\"\nscript = { base = \"source\", path = \"script.json\" }\n[options.shell]\nenabled = false\n"
	os.WriteFile(filepath.Join(dir, "deployment.toml"), []byte(doc), 0o600)
	d, err := Load(LoadOptions{Config: filepath.Join(dir, "deployment.toml"), Bindings: map[string]string{"workspace": ws}, LoopbackHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	store := ledger.NewMemoryStore()
	rt, err := d.NewRuntime(context.Background(), HostOptions{Store: store, Tracer: tracer, MCPTokens: &mcp.MemoryTokenStore{},
		LookupEnv: func(k string) (string, bool) { return "client-secret-value", k == "RECORDS_CLIENT_SECRET" }})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	obj, events := runTask(t, rt, "Who am I?")
	if obj.Outcome.Status != event.StatusCompleted {
		b, _ := json.Marshal(obj)
		t.Fatalf("outcome: %s", b)
	}
	recs, err := store.Records(context.Background(), *obj.RunID)
	if err != nil {
		t.Fatal(err)
	}
	evJSON, _ := json.Marshal(events)
	recJSON, _ := json.Marshal(recs)
	objJSON, _ := json.Marshal(obj)
	var spanText strings.Builder
	for _, s := range spans.Ended() {
		fmt.Fprint(&spanText, s.Name(), s.Attributes(), s.Events(), s.Status())
	}
	if !strings.Contains(string(evJSON), "called with") || !strings.Contains(string(evJSON), "pong") {
		t.Fatalf("the tools did not run: %s", evJSON)
	}
	for what, blob := range map[string]string{"events": string(evJSON), "ledger": string(recJSON), "task object": string(objJSON), "spans": spanText.String()} {
		for _, secret := range []string{"deployment-token-value", "client-secret-value"} {
			if strings.Contains(blob, secret) {
				t.Errorf("the %s hold %s: %s", what, secret, blob)
			}
		}
	}
}
