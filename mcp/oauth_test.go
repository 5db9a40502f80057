package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/pabloagent/pablo/internal/clock"
	"github.com/pabloagent/pablo/ledger"
)

// A server that answers 401 is authorized through discovery, dynamic
// registration and the authorization code grant with PKCE and the
// resource indicator; the call then succeeds with the token, which is
// kept in the store and appears in no record: not the ledger, not a span,
// not the health report, not an error.
func TestOAuthTokensReachTheirServerAndNoRecord(t *testing.T) {
	t.Parallel()
	f := newAuthFixture(t)
	store := ledger.NewMemoryStore()
	root, err := ledger.NewRoot(context.Background(), ledger.Options{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	spans := tracetest.NewSpanRecorder()
	tracer := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)).Tracer("test")
	tokens := &MemoryTokenStore{}
	a := &approver{}
	srv := f.server()
	c := open(t, Options{Servers: []Server{srv}, Authority: allowAll(t, srv), AllowLoopbackHTTP: true, Authorizer: a, Tokens: tokens,
		Ledger: root, AgentID: root.RootAgentID(), Tracer: tracer})
	if _, err := c.CallTool(context.Background(), "mcp/rec/echo", json.RawMessage(`{"message":"hi"}`)); err != nil {
		t.Fatal(err)
	}
	g, ok, _ := tokens.Load(context.Background(), TokenKey{Server: "rec", Resource: srv.URL})
	if !ok || g.AccessToken == "" || g.RefreshToken == "" || g.Resource != srv.URL || g.Issuer != f.as.URL {
		t.Fatalf("the store holds %v (%v)", g, ok)
	}
	if s := fmt.Sprintf("%v %+v %#v", g, g, g); strings.Contains(s, g.AccessToken) || strings.Contains(s, g.RefreshToken) {
		t.Fatalf("a grant prints its tokens: %s", s)
	}
	var authorize, token string
	for _, l := range f.seen() {
		switch {
		case strings.HasPrefix(l, "as POST /token"):
			token = l
		case strings.HasPrefix(l, "rs ") && strings.Contains(l, "Bearer") && !strings.Contains(l, g.AccessToken):
			t.Errorf("the server was sent another bearer token: %s", l)
		case strings.HasPrefix(l, "as ") && strings.Contains(l, "Bearer"):
			t.Errorf("the authorization server was sent a bearer token: %s", l)
		}
	}
	authorize = fmt.Sprint(a.count())
	if authorize != "1" || !strings.Contains(token, "resource="+url.QueryEscape(srv.URL)) || !strings.Contains(token, "code_verifier=") {
		t.Fatalf("authorizations %s, token request %q", authorize, token)
	}
	// A server that echoes the token has it masked in the result; a failed
	// call's error text is a record too.
	who, err := c.CallTool(context.Background(), "mcp/rec/whoami", json.RawMessage(`{}`))
	if err != nil || !strings.Contains(fmt.Sprint(who.Text), "called with Bearer") {
		t.Fatalf("whoami: %+v %v", who, err)
	}
	_, callErr := c.CallTool(context.Background(), "mcp/rec/echo", json.RawMessage(`{"nope":1}`))
	if err := root.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	recs, _ := store.Records(context.Background(), root.ID())
	blob := string(mustJSON(recs)) + string(mustJSON(c.Health())) + fmt.Sprint(callErr) + fmt.Sprint(who.Text)
	for _, s := range spans.Ended() {
		blob += s.Name() + fmt.Sprint(s.Attributes(), s.Events(), s.Status())
	}
	if !strings.Contains(blob, "mcp/rec/echo") {
		t.Fatalf("nothing was recorded: %s", blob)
	}
	for _, secret := range []string{g.AccessToken, g.RefreshToken, "TOKEN-"} {
		if strings.Contains(blob, secret) {
			t.Fatalf("a record holds a token (%s): %s", secret, blob)
		}
	}
}

// A token the store keeps for one server is sent to that server's URL
// only: the same name pointed elsewhere, or another server, starts afresh.
func TestOAuthStoredTokenIsBoundToItsServerURL(t *testing.T) {
	t.Parallel()
	f := newAuthFixture(t)
	tokens := &MemoryTokenStore{}
	tokens.Save(context.Background(), TokenKey{Server: "rec", Resource: "https://elsewhere.example.test/mcp"}, Grant{AccessToken: "foreign-token-value"})
	tokens.Save(context.Background(), TokenKey{Server: "other", Resource: f.rs.URL + "/mcp"}, Grant{AccessToken: "other-server-token"})
	srv := f.server()
	c := open(t, Options{Servers: []Server{srv}, Authority: allowAll(t, srv), AllowLoopbackHTTP: true, Authorizer: &approver{}, Tokens: tokens})
	if _, err := c.CallTool(context.Background(), "mcp/rec/echo", json.RawMessage(`{"message":"hi"}`)); err != nil {
		t.Fatal(err)
	}
	for _, l := range f.seen() {
		if strings.Contains(l, "foreign-token-value") || strings.Contains(l, "other-server-token") {
			t.Fatalf("a token of another server was sent: %s", l)
		}
	}
	if first := f.seen()[0]; !strings.HasPrefix(first, "rs POST /mcp ") || strings.Contains(first, "Bearer") {
		t.Fatalf("the first request was %q, want an initialize without a token", first)
	}
}

// Every URL discovery learns obeys the endpoint rules (HTTPS, or loopback
// when the host allows it) and no redirect is followed: a rule broken
// anywhere fails the server with ErrAuthorization before anything is sent
// to the URL, and no authorization is asked of the user.
func TestOAuthEndpointRulesApplyToEveryDiscoveredURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		prm  func(f *authFixture) func(map[string]any)
		meta func(f *authFixture) func(map[string]any)
		kind error
	}{
		{name: "PlainHTTPAuthorizationServer", prm: func(*authFixture) func(map[string]any) {
			return func(d map[string]any) { d["authorization_servers"] = []string{"http://as.example.test"} }
		}, kind: ErrConfig},
		{name: "PlainHTTPTokenEndpoint", meta: func(*authFixture) func(map[string]any) {
			return func(d map[string]any) { d["token_endpoint"] = "http://as.example.test/token" }
		}, kind: ErrConfig},
		{name: "PlainHTTPAuthorizationEndpoint", meta: func(*authFixture) func(map[string]any) {
			return func(d map[string]any) { d["authorization_endpoint"] = "http://as.example.test/authorize" }
		}, kind: ErrConfig},
		{name: "RegistrationEndpointWithFragment", meta: func(*authFixture) func(map[string]any) {
			return func(d map[string]any) { d["registration_endpoint"] = "https://as.example.test/register#x" }
		}, kind: ErrConfig},
		{name: "MetadataRedirects", meta: nil, kind: ErrRedirect},
		{name: "NoPKCE", meta: func(*authFixture) func(map[string]any) {
			return func(d map[string]any) { delete(d, "code_challenge_methods_supported") }
		}},
		{name: "ResourceOfAnotherServer", prm: func(*authFixture) func(map[string]any) {
			return func(d map[string]any) { d["resource"] = "https://evil.example.test/mcp" }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newAuthFixture(t)
			if tc.prm != nil {
				f.prm = tc.prm(f)
			}
			if tc.meta != nil {
				f.meta = tc.meta(f)
			}
			if tc.name == "MetadataRedirects" {
				// The protected resource's metadata names an authorization
				// server whose metadata answers with a redirect.
				redirector := newAuthFixture(t)
				redirector.as.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					http.Redirect(w, r, f.as.URL+r.URL.Path, http.StatusFound)
				})
				f.prm = func(d map[string]any) { d["authorization_servers"] = []string{redirector.as.URL} }
			}
			a := &approver{}
			srv := f.server()
			_, err := Open(context.Background(), Options{Servers: []Server{srv}, Authority: allowAll(t, srv), AllowLoopbackHTTP: true, Authorizer: a})
			var ae *AuthError
			if !errors.As(err, &ae) || !errors.Is(err, ErrAuthorization) || ae.Step != "discovery" {
				t.Fatalf("err = %v, want a discovery *AuthError", err)
			}
			if tc.kind != nil && !errors.Is(err, tc.kind) {
				t.Fatalf("err = %v, want kind %v", err, tc.kind)
			}
			if a.count() != 0 {
				t.Fatal("the user was asked to authorize")
			}
			for _, l := range f.seen() {
				if strings.Contains(l, "/authorize") || strings.Contains(l, "/token") || strings.Contains(l, "/register") {
					t.Fatalf("the flow went on after discovery failed: %s", l)
				}
			}
		})
	}
}

// An expired access token is refreshed before it is sent, with the
// resource indicator on the refresh request too; the user is not asked.
func TestOAuthExpiredTokenIsRefreshedWithTheResource(t *testing.T) {
	t.Parallel()
	f := newAuthFixture(t)
	f.ttl = 60
	tokens := &MemoryTokenStore{}
	srv := f.server()
	clk := clock.NewManual(time.Now())
	a := &approver{}
	c := open(t, Options{Servers: []Server{srv}, Authority: allowAll(t, srv), AllowLoopbackHTTP: true, Authorizer: a, Tokens: tokens, Clock: clk})
	clk.Advance(2 * time.Minute)
	if _, err := c.CallTool(context.Background(), "mcp/rec/echo", json.RawMessage(`{"message":"hi"}`)); err != nil {
		t.Fatal(err)
	}
	var refresh string
	for _, l := range f.seen() {
		if strings.Contains(l, "grant_type=refresh_token") {
			refresh = l
		}
	}
	if a.count() != 1 || !strings.Contains(refresh, "resource="+url.QueryEscape(srv.URL)) {
		t.Fatalf("authorizations %d, refresh request %q", a.count(), refresh)
	}
	if g, _, _ := tokens.Load(context.Background(), TokenKey{Server: "rec", Resource: srv.URL}); g.AccessToken != "access-TOKEN-2-secretvalue" {
		t.Fatalf("the store kept %q, not the refreshed token", g.AccessToken)
	}
}

// The authorization step is the host's: without an Authorizer a server
// that needs a user's consent fails with a reason that says so; a
// redirect whose state is not the one sent is refused as forged.
func TestOAuthAuthorizationGoesThroughTheHost(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		auth   Authorizer
		reason string
	}{
		{"NoAuthorizer", nil, "gave no Authorizer"},
		{"ForgedState", &approver{tamper: func(q url.Values) { q.Set("state", "forged") }}, "may be forged"},
		{"UserRefused", &approver{tamper: func(q url.Values) { q.Del("code"); q.Set("error", "access_denied") }}, "answered access_denied"},
		{"MixUp", &approver{tamper: func(q url.Values) { q.Set("iss", "https://other-as.example.test") }}, "RFC 9207"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newAuthFixture(t)
			srv := f.server()
			_, err := Open(context.Background(), Options{Servers: []Server{srv}, Authority: allowAll(t, srv), AllowLoopbackHTTP: true, Authorizer: tc.auth})
			var ae *AuthError
			if !errors.As(err, &ae) || ae.Step != "authorization" || !strings.Contains(err.Error(), tc.reason) {
				t.Fatalf("err = %v, want an authorization error saying %q", err, tc.reason)
			}
			var se *ServerError
			if !errors.As(err, &se) || se.Code != CodeOAuth {
				t.Fatalf("err = %v, want a ServerError with code %s", err, CodeOAuth)
			}
			for _, l := range f.seen() {
				if strings.HasPrefix(l, "as POST /token") {
					t.Fatalf("a token was requested: %s", l)
				}
			}
		})
	}
}

// A configuration that cannot work is refused before anything starts,
// naming what to change.
func TestOAuthConfigurationIsCheckedBeforeStart(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		edit   func(*Server)
		reason string
	}{
		{"OnStdio", func(s *Server) {
			*s = Server{Name: "rec", Transport: Stdio, Command: "/bin/true", Required: true, OAuth: &OAuth{}}
		}, "only for transport http"},
		{"WithAuthorizationHeader", func(s *Server) { s.Headers = map[string]string{"authorization": "tok"} }, "configure oauth or the header"},
		{"UnknownGrant", func(s *Server) { s.OAuth.Grant = "password" }, "oauth grant must be"},
		{"ClientCredentialsWithoutSecret", func(s *Server) { s.OAuth = &OAuth{Grant: GrantClientCredentials, ClientID: "c"} }, "needs client_id and client_secret"},
		{"IdentityAssertionWithoutIDToken", func(s *Server) {
			s.OAuth = &OAuth{Grant: GrantIdentityAssertion, ClientID: "c", IdentityProvider: "https://idp.example.test/token"}
		}, "needs client_id, id_token and identity_provider"},
		{"PlainHTTPMetadataURL", func(s *Server) { s.OAuth.ClientMetadataURL = "http://example.test/client.json" }, "must be an https URL"},
		{"ScopeWithSpace", func(s *Server) { s.OAuth.Scopes = []string{"a b"} }, "is not a scope token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httpServer("https://mcp.example.test/mcp")
			srv.OAuth = &OAuth{}
			tc.edit(&srv)
			_, err := Open(context.Background(), Options{Servers: []Server{srv}, Authority: allowAll(t, srv)})
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.reason) {
				t.Fatalf("err = %v, want a configuration error saying %q", err, tc.reason)
			}
		})
	}
}

// The Bearer challenge is read the way RFC 6750 and RFC 9728 write it:
// quoted and bare values, several challenges in one header.
func TestBearerChallengeIsParsed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		header string
		want   bearerChallenge
	}{
		{`Bearer resource_metadata="https://a.test/.well-known/oauth-protected-resource", scope="files:read files:write"`,
			bearerChallenge{resourceMetadata: "https://a.test/.well-known/oauth-protected-resource", scopes: []string{"files:read", "files:write"}}},
		{`Bearer error="insufficient_scope", scope="admin", resource_metadata="https://a.test/m"`,
			bearerChallenge{err: "insufficient_scope", scopes: []string{"admin"}, resourceMetadata: "https://a.test/m"}},
		{`Basic realm="x", Bearer scope=read`, bearerChallenge{scopes: []string{"read"}}},
		{`DPoP algs="ES256", Bearer realm="a\"b", scope="s"`, bearerChallenge{scopes: []string{"s"}}},
	} {
		got, ok := parseBearerChallenge([]string{tc.header})
		if !ok || fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: got %+v (%v), want %+v", tc.header, got, ok, tc.want)
		}
	}
	if _, ok := parseBearerChallenge([]string{`Basic realm="x"`}); ok {
		t.Error("a Basic challenge was read as Bearer")
	}
}
