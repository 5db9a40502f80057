package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// authFixture is a protected MCP server (mcp-go's Streamable HTTP server
// behind a bearer check) and its authorization server, each on its own
// loopback origin. It issues opaque tokens, checks PKCE, and records what
// it was sent.
type authFixture struct {
	t      *testing.T
	rs, as *httptest.Server

	mu sync.Mutex
	// prm and meta, when set, edit the metadata documents before they are
	// served.
	prm  func(map[string]any)
	meta func(map[string]any)
	// ttl is the lifetime of access tokens (seconds; 0: 3600).
	ttl int
	// tokens maps an access token to its expiry.
	tokens    map[string]time.Time
	refreshes map[string]bool
	challenge string // the last code_challenge
	n         int
	// log records every request: "rs METHOD path authorization" and
	// "as METHOD path form".
	log []string
}

func newAuthFixture(t *testing.T) *authFixture {
	f := &authFixture{t: t, tokens: map[string]time.Time{}, refreshes: map[string]bool{}}
	s := mcpserver.NewMCPServer("protected", "1.0.0", mcpserver.WithToolCapabilities(false))
	s.AddTool(mcpgo.NewTool("echo", mcpgo.WithString("message", mcpgo.Required())), func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultText("echo: " + req.GetString("message", "")), nil
	})
	// whoami echoes the credential it was called with, as a careless
	// server's diagnostics would.
	s.AddTool(mcpgo.NewTool("whoami"), func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultText("called with " + req.Header.Get("Authorization")), nil
	})
	h := mcpserver.NewStreamableHTTPServer(s)
	f.rs = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.record("rs " + r.Method + " " + r.URL.Path + " " + r.Header.Get("Authorization"))
		if r.URL.Path == "/.well-known/oauth-protected-resource/mcp" {
			doc := map[string]any{"resource": f.rs.URL + "/mcp", "authorization_servers": []string{f.as.URL}, "scopes_supported": []string{"files:read"}}
			f.edit(f.prm, doc)
			writeJSON(w, doc)
			return
		}
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		f.mu.Lock()
		exp, known := f.tokens[tok]
		f.mu.Unlock()
		if !ok || !known || time.Now().After(exp) {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+f.rs.URL+`/.well-known/oauth-protected-resource/mcp"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	f.as = httptest.NewServer(http.HandlerFunc(f.serveAS))
	t.Cleanup(f.rs.Close)
	t.Cleanup(f.as.Close)
	return f
}

func (f *authFixture) record(s string) {
	f.mu.Lock()
	f.log = append(f.log, s)
	f.mu.Unlock()
}

func (f *authFixture) seen() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string{}, f.log...)
}

func (f *authFixture) edit(fn func(map[string]any), doc map[string]any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fn != nil {
		fn(doc)
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func (f *authFixture) serveAS(w http.ResponseWriter, r *http.Request) {
	r.ParseForm()
	f.record("as " + r.Method + " " + r.URL.Path + " " + r.PostForm.Encode() + " " + r.Header.Get("Authorization"))
	switch r.URL.Path {
	case "/.well-known/oauth-authorization-server":
		doc := map[string]any{"issuer": f.as.URL, "authorization_endpoint": f.as.URL + "/authorize", "token_endpoint": f.as.URL + "/token",
			"registration_endpoint": f.as.URL + "/register", "code_challenge_methods_supported": []string{"S256"},
			"token_endpoint_auth_methods_supported": []string{"none"}, "response_types_supported": []string{"code"}}
		f.edit(f.meta, doc)
		writeJSON(w, doc)
	case "/register":
		w.WriteHeader(http.StatusCreated)
		writeJSON(w, map[string]any{"client_id": "registered-client"})
	case "/authorize":
		q := r.URL.Query()
		f.mu.Lock()
		f.challenge = q.Get("code_challenge")
		f.mu.Unlock()
		back, _ := url.Parse(q.Get("redirect_uri"))
		v := back.Query()
		v.Set("code", "the-code")
		v.Set("state", q.Get("state"))
		back.RawQuery = v.Encode()
		http.Redirect(w, r, back.String(), http.StatusFound)
	case "/token":
		f.mu.Lock()
		defer f.mu.Unlock()
		switch r.PostForm.Get("grant_type") {
		case "authorization_code":
			sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
			if r.PostForm.Get("code") != "the-code" || base64.RawURLEncoding.EncodeToString(sum[:]) != f.challenge {
				w.WriteHeader(http.StatusBadRequest)
				writeJSON(w, map[string]string{"error": "invalid_grant"})
				return
			}
		case "refresh_token":
			if !f.refreshes[r.PostForm.Get("refresh_token")] {
				w.WriteHeader(http.StatusBadRequest)
				writeJSON(w, map[string]string{"error": "invalid_grant"})
				return
			}
		default:
			w.WriteHeader(http.StatusBadRequest)
			writeJSON(w, map[string]string{"error": "unsupported_grant_type"})
			return
		}
		f.n++
		ttl := f.ttl
		if ttl == 0 {
			ttl = 3600
		}
		access, refresh := fmt.Sprintf("access-TOKEN-%d-secretvalue", f.n), fmt.Sprintf("refresh-TOKEN-%d-secretvalue", f.n)
		f.tokens[access] = time.Now().Add(time.Duration(ttl) * time.Second)
		f.refreshes[refresh] = true
		writeJSON(w, map[string]any{"access_token": access, "refresh_token": refresh, "token_type": "Bearer", "expires_in": ttl})
	default:
		http.NotFound(w, r)
	}
}

// server is the fixture's MCP server configured with OAuth.
func (f *authFixture) server() Server {
	s := httpServer(f.rs.URL + "/mcp")
	s.OAuth = &OAuth{}
	return s
}

// approver is an Authorizer that approves at once, the way a user would
// in a browser: it fetches the authorization URL without following the
// redirect and hands back the redirect's query. It counts authorizations
// and can tamper with the answer.
type approver struct {
	mu     sync.Mutex
	n      int
	tamper func(url.Values)
}

func (a *approver) RedirectURI(context.Context, string) (string, error) {
	return "http://127.0.0.1:9/callback", nil
}

func (a *approver) Authorize(ctx context.Context, req AuthorizationRequest) (url.Values, error) {
	a.mu.Lock()
	a.n++
	a.mu.Unlock()
	hreq, _ := http.NewRequestWithContext(ctx, http.MethodGet, req.URL, nil)
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(hreq)
	if err != nil {
		return nil, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || resp.StatusCode != http.StatusFound {
		return nil, errors.New("no redirect")
	}
	q := loc.Query()
	if a.tamper != nil {
		a.tamper(q)
	}
	return q, nil
}

func (a *approver) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n
}
