package mcp

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/internal/httpx"
	"github.com/pabloagent/pablo/internal/textx"
)

const (
	// maxAuthorizations bounds the grants one request may start: the first
	// and the step-ups after it (the MCP scope challenge handling asks
	// clients to bound their retries).
	maxAuthorizations = 3
	// expiryLeeway refreshes a token this long before it expires.
	expiryLeeway = 30 * time.Second
	// assertionLifetime is how long a private_key_jwt assertion is valid.
	assertionLifetime = 5 * time.Minute
	// Client authentication methods at the token endpoint.
	authNone        = "none"
	authSecretBasic = "client_secret_basic"
	authSecretPost  = "client_secret_post"
	authPrivateKey  = "private_key_jwt"
)

// oauthClient is one server's OAuth client: its discovery, registration,
// grant and tokens. It talks to the authorization server through its own
// HTTP client, which carries none of the MCP server's credentials, never
// follows a redirect and checks every URL it is sent to.
type oauthClient struct {
	server, endpoint string
	cfg              OAuth
	allowLoopback    bool
	http             *http.Client
	store            TokenStore
	authorizer       Authorizer
	clientName       string
	// credential resolves one of the configuration's credentials (consumer
	// mcp.oauth); keep adds a secret to the catalog's mask set.
	credential func(ctx context.Context, name, destination string) (string, error)
	keep       func(secret string)
	now        func() time.Time

	// mu serializes token use and renewal: one authorization at a time.
	mu     sync.Mutex
	loaded bool
	g      Grant
	disc   *discovery
}

// newOAuthClient returns the OAuth client of one configured server.
func newOAuthClient(srv *Server, opts *Options, credential func(context.Context, string, string) (string, error), keep func(string)) *oauthClient {
	store := opts.Tokens
	if store == nil {
		store = &MemoryTokenStore{}
	}
	name := opts.ClientName
	if name == "" {
		name = "pablo"
	}
	return &oauthClient{
		server: srv.Name, endpoint: srv.URL, cfg: *srv.OAuth, allowLoopback: opts.AllowLoopbackHTTP,
		http: httpx.New(httpx.Options{
			MaxHeaderBytes: maxResponseHeaderBytes, MaxBodyBytes: maxMetadataBytes * 4, Timeout: DefaultOperationTimeout,
			Redirect: func(req *http.Request) error {
				target := *req.URL
				target.RawQuery, target.Fragment = "", ""
				return fmt.Errorf("%w: an OAuth endpoint answered with a redirect to %s; redirects are never followed", ErrRedirect, textx.Shorten(target.Redacted(), 300))
			},
		}),
		store: store, authorizer: opts.Authorizer, clientName: name,
		credential: credential, keep: keep, now: opts.Clock.Now,
	}
}

func (o *oauthClient) grant() string {
	if o.cfg.Grant == "" {
		return GrantAuthorizationCode
	}
	return o.cfg.Grant
}

func (o *oauthClient) key() TokenKey { return TokenKey{Server: o.server, Resource: o.endpoint} }

// token returns the access token to send, "" when there is none yet. The
// first call loads the stored grant; an expired token is refreshed when a
// refresh token allows, else dropped so the server's 401 starts a grant.
func (o *oauthClient) token(ctx context.Context) (string, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.loaded {
		g, ok, err := o.store.Load(ctx, o.key())
		if err != nil {
			return "", &AuthError{Server: o.server, Step: "access", Reason: "the token store could not load the grant", Err: err}
		}
		o.loaded = true
		if ok {
			o.g = g
			o.remember(g)
		}
	}
	if o.g.AccessToken == "" {
		return "", nil
	}
	if !o.g.Expiry.IsZero() && !o.now().Before(o.g.Expiry.Add(-expiryLeeway)) {
		if o.g.RefreshToken == "" || o.refresh(ctx) != nil {
			o.g.AccessToken = ""
			return "", nil
		}
	}
	return o.g.AccessToken, nil
}

// challenged handles a 401 or a 403 insufficient_scope answer to a request
// that carried sent ("" for none), the attempt-th grant of that request.
// It returns nil when the request should be sent again with the token now
// held.
func (o *oauthClient) challenged(ctx context.Context, status int, ch bearerChallenge, sent string, attempt int) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if sent != o.g.AccessToken && o.g.AccessToken != "" {
		// Another request renewed the token meanwhile: try that one.
		return nil
	}
	if attempt >= maxAuthorizations {
		return &AuthError{Server: o.server, Step: "access", Reason: fmt.Sprintf("the server refused the request after %d authorizations (HTTP %d)", attempt, status)}
	}
	var scopes []string
	if status == http.StatusForbidden {
		scopes = union(o.g.Scopes, ch.scopes)
		if len(scopes) == len(o.g.Scopes) {
			return &AuthError{Server: o.server, Step: "access", Reason: fmt.Sprintf("the server refused the token for insufficient scope but asks for no scope beyond the ones granted (%s); a new authorization cannot help", strings.Join(o.g.Scopes, " "))}
		}
	} else if sent != "" && o.g.RefreshToken != "" {
		if o.refresh(ctx) == nil {
			return nil
		}
	}
	if o.disc == nil {
		d, err := o.discover(ctx, ch)
		if err != nil {
			return err
		}
		o.disc = d
	}
	if scopes == nil {
		scopes = o.selectScopes(ch)
	}
	switch o.grant() {
	case GrantClientCredentials:
		return o.clientCredentials(ctx, scopes)
	case GrantIdentityAssertion:
		return o.identityAssertion(ctx, scopes)
	}
	return o.authorizationCode(ctx, scopes)
}

// selectScopes follows the MCP scope selection strategy: the configured
// scopes, else the challenge's, else the protected resource's
// scopes_supported, else none (the scope parameter is left out). A client
// that can be refreshed asks for offline_access where the authorization
// server lists it.
func (o *oauthClient) selectScopes(ch bearerChallenge) []string {
	var s []string
	switch {
	case len(o.cfg.Scopes) > 0:
		s = union(o.cfg.Scopes, nil)
	case len(ch.scopes) > 0:
		s = union(ch.scopes, nil)
	default:
		s = union(o.disc.scopes, nil)
	}
	if len(s) > 0 && o.grant() == GrantAuthorizationCode && contains(o.disc.meta.ScopesSupported, "offline_access") {
		s = union(s, []string{"offline_access"})
	}
	return s
}

// registration is the client as the authorization server knows it.
type registration struct {
	id, secret, method, redirect string
}

// register returns the client to use with the discovered authorization
// server: the configured one, a client ID metadata document, an earlier
// dynamic registration for the same server and redirect URI, or a new one.
func (o *oauthClient) register(ctx context.Context, redirect string) (registration, error) {
	m := &o.disc.meta
	fail := func(reason string, err error) (registration, error) {
		return registration{}, &AuthError{Server: o.server, Step: "registration", Reason: reason, Err: err}
	}
	switch {
	case o.cfg.ClientID != "":
		r := registration{id: o.cfg.ClientID, redirect: redirect, method: authNone}
		switch {
		case o.cfg.PrivateKey != "":
			r.method = authPrivateKey
		case o.cfg.ClientSecret != "":
			sec, err := o.credential(ctx, o.cfg.ClientSecret, "mcp:"+o.server+":oauth:client_secret")
			if err != nil {
				return fail("the client secret", err)
			}
			r.secret = sec
			r.method = authSecretBasic
			if len(m.TokenEndpointAuthMethodsSupported) > 0 && !contains(m.TokenEndpointAuthMethodsSupported, authSecretBasic) && contains(m.TokenEndpointAuthMethodsSupported, authSecretPost) {
				r.method = authSecretPost
			}
		}
		return r, nil
	case o.cfg.ClientMetadataURL != "" && m.ClientIDMetadataDocumentSupported:
		return registration{id: o.cfg.ClientMetadataURL, method: authNone, redirect: redirect}, nil
	case o.g.ClientID != "" && o.g.Issuer == m.Issuer && o.g.RedirectURI == redirect:
		return registration{id: o.g.ClientID, secret: o.g.ClientSecret, method: o.g.AuthMethod, redirect: redirect}, nil
	case m.RegistrationEndpoint == "":
		return fail("the authorization server supports neither a client ID metadata document (or none is configured: oauth client_metadata_url) nor dynamic registration; register a client with it and configure oauth client_id", nil)
	}
	method := authNone
	if ms := m.TokenEndpointAuthMethodsSupported; len(ms) > 0 && !contains(ms, authNone) {
		method = authSecretBasic
		if !contains(ms, authSecretBasic) && contains(ms, authSecretPost) {
			method = authSecretPost
		}
	}
	body, _ := json.Marshal(map[string]any{
		"client_name":                o.clientName,
		"redirect_uris":              []string{redirect},
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": method,
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.RegistrationEndpoint, bytes.NewReader(body))
	if err != nil {
		return fail("the registration request", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := o.http.Do(req)
	if err != nil {
		return fail("the registration endpoint", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadataBytes))
	if err != nil {
		return fail("the registration answer", err)
	}
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return fail(fmt.Sprintf("the registration endpoint answered HTTP %s: %s", resp.Status, textx.Shorten(printable(string(b)), maxSnippet)), nil)
	}
	var ans struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
		Method       string `json:"token_endpoint_auth_method"`
	}
	if err := json.Unmarshal(b, &ans); err != nil || ans.ClientID == "" {
		return fail("the registration answer holds no client_id", err)
	}
	r := registration{id: ans.ClientID, secret: ans.ClientSecret, method: ans.Method, redirect: redirect}
	if r.method == "" {
		r.method = method
		if r.secret != "" && method == authNone {
			r.method = authSecretBasic
		}
	}
	return r, nil
}

// authorizationCode runs the authorization code grant with PKCE (S256),
// state and the resource indicator, through the host's Authorizer.
func (o *oauthClient) authorizationCode(ctx context.Context, scopes []string) error {
	fail := func(reason string, err error) error {
		return &AuthError{Server: o.server, Step: "authorization", Reason: reason, Err: err}
	}
	if o.authorizer == nil {
		return fail("the server needs a user's authorization and the host gave no Authorizer (Options.Authorizer): authorize it interactively, or configure client credentials", nil)
	}
	redirect, err := o.authorizer.RedirectURI(ctx, o.server)
	if err != nil {
		return fail("the host's redirect URI", err)
	}
	if u, err := url.Parse(redirect); err != nil || !u.IsAbs() || u.Fragment != "" {
		return fail(fmt.Sprintf("the host's redirect URI %q is not an absolute URI without a fragment", textx.Shorten(redirect, 200)), nil)
	}
	reg, err := o.register(ctx, redirect)
	if err != nil {
		return err
	}
	conf := o.config(reg, scopes)
	verifier, state := oauth2.GenerateVerifier(), oauth2.GenerateVerifier()
	authURL := conf.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", o.disc.resource))
	q, err := o.authorizer.Authorize(ctx, AuthorizationRequest{Server: o.server, Issuer: o.disc.meta.Issuer, URL: authURL, State: state, Scopes: slices.Clone(scopes)})
	if err != nil {
		return fail("the host's authorization step", err)
	}
	if q.Get("state") != state {
		return fail("the redirect carried a state other than the one sent; it may be forged", nil)
	}
	if e := q.Get("error"); e != "" {
		return fail(fmt.Sprintf("the authorization server answered %s: %s", textx.Shorten(printable(e), 64), textx.Shorten(printable(q.Get("error_description")), maxSnippet)), nil)
	}
	if iss := q.Get("iss"); (iss != "" || o.disc.meta.IssParameterSupported) && iss != o.disc.meta.Issuer {
		return fail(fmt.Sprintf("the redirect names issuer %q, not %q (RFC 9207): it may come from another authorization server", textx.Shorten(iss, 200), textx.Shorten(o.disc.meta.Issuer, 200)), nil)
	}
	code := q.Get("code")
	if code == "" {
		return fail("the redirect carried no code", nil)
	}
	opts := []oauth2.AuthCodeOption{oauth2.VerifierOption(verifier), oauth2.SetAuthURLParam("resource", o.disc.resource)}
	if reg.method == authPrivateKey {
		a, err := o.assertion(ctx, reg.id)
		if err != nil {
			return err
		}
		opts = append(opts, oauth2.SetAuthURLParam("client_assertion_type", assertionType), oauth2.SetAuthURLParam("client_assertion", a))
	}
	tok, err := conf.Exchange(o.tokenContext(ctx), code, opts...)
	if err != nil {
		return o.tokenError("token", err)
	}
	return o.hold(ctx, reg, tok, scopes)
}

// clientCredentials obtains a token with the client's own credentials.
func (o *oauthClient) clientCredentials(ctx context.Context, scopes []string) error {
	reg, err := o.register(ctx, "")
	if err != nil {
		return err
	}
	conf := clientcredentials.Config{ClientID: reg.id, ClientSecret: reg.secret, TokenURL: o.disc.meta.TokenEndpoint, Scopes: scopes,
		EndpointParams: url.Values{"resource": {o.disc.resource}}, AuthStyle: authStyle(reg.method)}
	if reg.method == authPrivateKey {
		a, err := o.assertion(ctx, reg.id)
		if err != nil {
			return err
		}
		conf.EndpointParams.Set("client_assertion_type", assertionType)
		conf.EndpointParams.Set("client_assertion", a)
	}
	tok, err := conf.Token(o.tokenContext(ctx))
	if err != nil {
		return o.tokenError("token", err)
	}
	return o.hold(ctx, reg, tok, scopes)
}

// refresh renews the access token with the refresh token; the caller holds
// o.mu.
func (o *oauthClient) refresh(ctx context.Context) error {
	g := o.g
	conf := &oauth2.Config{ClientID: g.ClientID, ClientSecret: g.ClientSecret, Endpoint: oauth2.Endpoint{TokenURL: g.TokenURL, AuthStyle: authStyle(g.AuthMethod)}}
	if g.AuthMethod == authPrivateKey || checkDiscoveredURL(g.TokenURL, o.allowLoopback) != nil {
		return errors.New("the grant cannot be refreshed")
	}
	tok, err := conf.TokenSource(o.tokenContext(ctx), &oauth2.Token{RefreshToken: g.RefreshToken, Expiry: time.Unix(1, 0)}).Token()
	if err != nil {
		return o.tokenError("refresh", err)
	}
	reg := registration{id: g.ClientID, secret: g.ClientSecret, method: g.AuthMethod, redirect: g.RedirectURI}
	return o.hold(ctx, reg, tok, g.Scopes)
}

// hold keeps a new token: in memory, in the mask set and in the store.
func (o *oauthClient) hold(ctx context.Context, reg registration, tok *oauth2.Token, asked []string) error {
	if !strings.EqualFold(tok.Type(), "Bearer") {
		return &AuthError{Server: o.server, Step: "token", Reason: fmt.Sprintf("the token endpoint issued a %q token; only Bearer tokens are used", textx.Shorten(printable(tok.Type()), 32))}
	}
	granted := asked
	if s, ok := tok.Extra("scope").(string); ok && s != "" {
		granted = union(asked, strings.Fields(s))
	}
	g := Grant{
		Issuer: o.g.Issuer, TokenURL: o.g.TokenURL, Resource: o.g.Resource,
		ClientID: reg.id, ClientSecret: reg.secret, AuthMethod: reg.method, RedirectURI: reg.redirect,
		AccessToken: tok.AccessToken, RefreshToken: tok.RefreshToken, Expiry: tok.Expiry, Scopes: granted,
	}
	if o.disc != nil {
		g.Issuer, g.TokenURL, g.Resource = o.disc.meta.Issuer, o.disc.meta.TokenEndpoint, o.disc.resource
	}
	if o.cfg.ClientID != "" {
		// A configured secret stays a credential: it is resolved each time,
		// never copied into the store.
		g.ClientSecret = ""
	}
	o.remember(g)
	o.g = g
	if err := o.store.Save(ctx, o.key(), g); err != nil {
		return &AuthError{Server: o.server, Step: "token", Reason: "the token store did not keep the grant", Err: err}
	}
	return nil
}

// remember adds a grant's secrets to the catalog's mask set.
func (o *oauthClient) remember(g Grant) {
	for _, s := range []string{g.AccessToken, g.RefreshToken, g.ClientSecret} {
		if s != "" {
			o.keep(s)
		}
	}
}

// config is the oauth2 configuration of one grant.
func (o *oauthClient) config(reg registration, scopes []string) *oauth2.Config {
	return &oauth2.Config{
		ClientID: reg.id, ClientSecret: reg.secret, RedirectURL: reg.redirect, Scopes: scopes,
		Endpoint: oauth2.Endpoint{AuthURL: o.disc.meta.AuthorizationEndpoint, TokenURL: o.disc.meta.TokenEndpoint, AuthStyle: authStyle(reg.method)},
	}
}

// tokenContext hands oauth2 the authorization server's client. A refresh
// has no option for extra parameters, so the transport adds the resource
// indicator to any token request that lacks one.
func (o *oauthClient) tokenContext(ctx context.Context) context.Context {
	resource := o.g.Resource
	if o.disc != nil {
		resource = o.disc.resource
	}
	c := &http.Client{Transport: &resourceTransport{base: o.http.Transport, resource: resource}, CheckRedirect: o.http.CheckRedirect, Timeout: o.http.Timeout}
	return context.WithValue(ctx, oauth2.HTTPClient, c)
}

// tokenError describes a failed token request with the server's error
// code and description, never its whole body.
func (o *oauthClient) tokenError(step string, err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		reason := "the token endpoint answered HTTP " + re.Response.Status
		if re.ErrorCode != "" {
			reason += ": " + textx.Shorten(printable(re.ErrorCode), 64)
			if re.ErrorDescription != "" {
				reason += " (" + textx.Shorten(printable(re.ErrorDescription), maxSnippet) + ")"
			}
		}
		return &AuthError{Server: o.server, Step: step, Reason: reason}
	}
	return &AuthError{Server: o.server, Step: step, Reason: "the token request failed", Err: err}
}

func authStyle(method string) oauth2.AuthStyle {
	if method == authSecretBasic {
		return oauth2.AuthStyleInHeader
	}
	return oauth2.AuthStyleInParams
}

// resourceTransport adds the resource indicator to token requests.
type resourceTransport struct {
	base     http.RoundTripper
	resource string
}

func (t *resourceTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.resource != "" && req.Method == http.MethodPost && req.Body != nil && strings.HasPrefix(req.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		b, err := io.ReadAll(io.LimitReader(req.Body, maxMetadataBytes))
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		v, err := url.ParseQuery(string(b))
		if err != nil {
			return nil, err
		}
		if v.Get("resource") == "" {
			v.Set("resource", t.resource)
		}
		enc := v.Encode()
		r := req.Clone(req.Context())
		r.Body = io.NopCloser(strings.NewReader(enc))
		r.ContentLength = int64(len(enc))
		r.GetBody = nil
		req = r
	}
	return t.base.RoundTrip(req)
}

// union returns a followed by the members of b it lacks.
func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// randomID is 16 random bytes, base64url.
func randomID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// oauthCredential resolves one of a server's OAuth credentials.
func (c *Catalog) oauthCredential(ctx context.Context, name, destination string) (string, error) {
	sec, err := c.resolve(ctx, name, authority.ConsumerMCPOAuth, destination)
	if err != nil {
		return "", err
	}
	return sec.Reveal(), nil
}

// Token types and grants of enterprise-managed authorization.
const (
	grantTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
	grantJWTBearer     = "urn:ietf:params:oauth:grant-type:jwt-bearer"
	tokenTypeIDToken   = "urn:ietf:params:oauth:token-type:id_token"
	tokenTypeIDJAG     = "urn:ietf:params:oauth:token-type:id-jag"
)

// identityAssertion runs enterprise-managed authorization (SEP-990): the
// user's ID token is exchanged at the identity provider for an identity
// assertion grant for this server's authorization server and resource
// (RFC 8693), which that server takes as a JWT bearer grant (RFC 7523)
// from the pre-registered client.
func (o *oauthClient) identityAssertion(ctx context.Context, scopes []string) error {
	fail := func(reason string, err error) error {
		return &AuthError{Server: o.server, Step: "token", Reason: reason, Err: err}
	}
	if err := checkDiscoveredURL(o.cfg.IdentityProvider, o.allowLoopback); err != nil {
		return fail("the identity provider's token endpoint", err)
	}
	idToken, err := o.credential(ctx, o.cfg.IDToken, "mcp:"+o.server+":oauth:id_token")
	if err != nil {
		return fail("the ID token", err)
	}
	exchange := clientcredentials.Config{ClientID: o.cfg.IdentityClientID, TokenURL: o.cfg.IdentityProvider, AuthStyle: oauth2.AuthStyleInParams,
		EndpointParams: url.Values{"grant_type": {grantTokenExchange}, "subject_token": {idToken}, "subject_token_type": {tokenTypeIDToken},
			"requested_token_type": {tokenTypeIDJAG}, "audience": {o.disc.meta.Issuer}, "resource": {o.disc.resource}}}
	if len(scopes) > 0 {
		exchange.EndpointParams.Set("scope", strings.Join(scopes, " "))
	}
	jag, err := exchange.Token(o.tokenContext(ctx))
	if err != nil {
		return o.tokenError("token", err)
	}
	if t, _ := jag.Extra("issued_token_type").(string); t != tokenTypeIDJAG {
		return fail(fmt.Sprintf("the identity provider issued a %q, not an identity assertion grant", textx.Shorten(printable(t), 80)), nil)
	}
	o.keep(jag.AccessToken)
	reg, err := o.register(ctx, "")
	if err != nil {
		return err
	}
	conf := clientcredentials.Config{ClientID: reg.id, ClientSecret: reg.secret, TokenURL: o.disc.meta.TokenEndpoint, Scopes: scopes, AuthStyle: authStyle(reg.method),
		EndpointParams: url.Values{"grant_type": {grantJWTBearer}, "assertion": {jag.AccessToken}, "resource": {o.disc.resource}}}
	tok, err := conf.Token(o.tokenContext(ctx))
	if err != nil {
		return o.tokenError("token", err)
	}
	return o.hold(ctx, reg, tok, scopes)
}
