package pablo

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

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
	var mu sync.Mutex
	var tokenForm, tokenAuth string
	s := mcpserver.NewMCPServer("protected", "1.0.0", mcpserver.WithToolCapabilities(false))
	s.AddTool(mcpgo.NewTool("ping"), func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultText("pong"), nil
	})
	h := mcpserver.NewStreamableHTTPServer(s)
	var as, rs *httptest.Server
	as = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server":
			json.NewEncoder(w).Encode(map[string]any{"issuer": as.URL, "token_endpoint": as.URL + "/token", "grant_types_supported": []string{"client_credentials"}})
		case "/token":
			r.ParseForm()
			mu.Lock()
			tokenForm, tokenAuth = r.PostForm.Encode(), r.Header.Get("Authorization")
			mu.Unlock()
			json.NewEncoder(w).Encode(map[string]any{"access_token": "deployment-token-value", "token_type": "Bearer", "expires_in": 3600})
		default:
			http.NotFound(w, r)
		}
	}))
	defer as.Close()
	rs = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/.well-known/oauth-protected-resource/mcp" {
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"resource": rs.URL + "/mcp", "authorization_servers": []string{as.URL}})
			return
		}
		if r.Header.Get("Authorization") != "Bearer deployment-token-value" {
			w.Header().Set("WWW-Authenticate", `Bearer scope="records:read"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer rs.Close()
	dir := t.TempDir()
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	cfg := filepath.Join(dir, "deployment.toml")
	os.WriteFile(cfg, []byte(`schema_version = 1
[credentials.records_oauth]
consumer = "mcp.oauth"
sources = [{ kind = "environment", name = "RECORDS_CLIENT_SECRET" }]
[options.mcp.servers.records]
transport = "http"
url = "`+rs.URL+`/mcp"
required = true
oauth = { grant = "client_credentials", client_id = "pablo-records", client_secret = "records_oauth", scopes = ["records:read", "records:list"] }
`), 0o600)
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
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(tokenForm, "grant_type=client_credentials") || !strings.Contains(tokenForm, "scope=records%3Aread+records%3Alist") ||
		!strings.HasPrefix(tokenAuth, "Basic ") {
		t.Fatalf("token request %q (auth %q)", tokenForm, tokenAuth)
	}
	if g, ok, _ := tokens.Load(context.Background(), mcp.TokenKey{Server: "records", Resource: rs.URL + "/mcp"}); !ok || g.AccessToken != "deployment-token-value" || g.ClientSecret != "" {
		t.Fatalf("the host's store holds %v (%v); a configured secret is never copied into it", g, ok)
	}
}
