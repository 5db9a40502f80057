package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/pabloagent/pablo/internal/textx"
)

// OAuth grant types a server's OAuth configuration may name.
const (
	// GrantAuthorizationCode is the default: a user authorizes the client
	// through the host (Options.Authorizer), with PKCE.
	GrantAuthorizationCode = "authorization_code"
	// GrantClientCredentials is machine-to-machine access with a
	// pre-registered client's own credentials (the MCP client credentials
	// extension, SEP-1046).
	GrantClientCredentials = "client_credentials"
	// GrantIdentityAssertion is enterprise-managed authorization (SEP-990):
	// the user's ID token from the enterprise's identity provider is
	// exchanged there for an identity assertion grant (RFC 8693), which
	// the authorization server takes as a JWT bearer grant (RFC 7523).
	GrantIdentityAssertion = "identity_assertion"
)

// OAuth is a Streamable HTTP server's OAuth 2.1 client configuration, per
// the MCP authorization specification. With it the catalog answers the
// server's 401 by discovering the server's protected resource metadata (RFC
// 9728) and its authorization server's metadata (RFC 8414 and OpenID
// discovery, with the 2025-03-26 fallbacks), obtains a client ID
// (pre-registered, a client ID metadata document, or dynamic registration),
// runs the grant with PKCE and the resource indicator (RFC 8707), and sends
// the access token to that server and nowhere else.
//
// Secrets are credential names, resolved through Options.Resolve with
// consumer mcp.oauth; tokens are kept in Options.Tokens.
type OAuth struct {
	// Grant is GrantAuthorizationCode (the default when empty) or
	// GrantClientCredentials.
	Grant string
	// ClientID is a client registered with the authorization server
	// beforehand. Empty: a client ID metadata document (ClientMetadataURL)
	// where the server supports one, else dynamic registration.
	ClientID string
	// ClientSecret names the credential holding a pre-registered
	// confidential client's secret (destination "mcp:SERVER:oauth:client_secret").
	ClientSecret string
	// PrivateKey names the credential holding a PEM (PKCS#8, SEC 1 or
	// PKCS#1) EC P-256 or RSA private key: the client authenticates at the
	// token endpoint with a signed JWT (private_key_jwt, RFC 7523)
	// instead of a secret (destination "mcp:SERVER:oauth:private_key").
	PrivateKey string
	// ClientMetadataURL is the HTTPS URL of this client's metadata
	// document, used as its client ID by an authorization server that
	// advertises client_id_metadata_document_supported.
	ClientMetadataURL string
	// IDToken names the credential holding the user's ID token from the
	// identity provider (destination "mcp:SERVER:oauth:id_token"), and
	// IdentityProvider that provider's token endpoint, which must obey
	// the endpoint rules; IdentityClientID is this client's ID there. All
	// three are for GrantIdentityAssertion.
	IDToken          string
	IdentityProvider string
	IdentityClientID string
	// Scopes, when set, are the scopes asked for instead of the ones the
	// server names (its WWW-Authenticate challenge, then its metadata's
	// scopes_supported). A step-up challenge still adds to them.
	Scopes []string
}

// Validate reports a configuration that cannot be used, naming the field.
func (o *OAuth) validate() error {
	switch o.Grant {
	case "", GrantAuthorizationCode:
	case GrantClientCredentials:
		if o.ClientID == "" || (o.ClientSecret == "" && o.PrivateKey == "") {
			return errors.New("oauth grant client_credentials needs client_id and client_secret or private_key")
		}
	case GrantIdentityAssertion:
		if o.ClientID == "" || o.IDToken == "" || o.IdentityProvider == "" {
			return errors.New("oauth grant identity_assertion needs client_id, id_token and identity_provider")
		}
	default:
		return fmt.Errorf("oauth grant must be %q, %q or %q, got %q", GrantAuthorizationCode, GrantClientCredentials, GrantIdentityAssertion, textx.Shorten(o.Grant, 40))
	}
	if o.ClientSecret != "" && o.PrivateKey != "" {
		return errors.New("oauth client_secret and private_key exclude each other: a client authenticates one way")
	}
	if (o.ClientSecret != "" || o.PrivateKey != "") && o.ClientID == "" {
		return errors.New("oauth client_secret and private_key belong to a pre-registered client: set client_id too")
	}
	if o.ClientMetadataURL != "" {
		u, err := url.Parse(o.ClientMetadataURL)
		if err != nil || u.Scheme != "https" || u.Host == "" || u.Path == "" || u.Path == "/" || u.Fragment != "" || u.User != nil {
			return fmt.Errorf("oauth client_metadata_url must be an https URL with a path, got %q", textx.Shorten(o.ClientMetadataURL, 200))
		}
	}
	for _, s := range o.Scopes {
		if !validScope(s) {
			return fmt.Errorf("oauth scope %q is not a scope token (visible ASCII, no space, quote or backslash)", textx.Shorten(s, 64))
		}
	}
	return nil
}

// validScope reports whether s is an RFC 6749 scope-token.
func validScope(s string) bool {
	if s == "" || len(s) > 256 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// TokenKey names one server's grant in a TokenStore: the configured server
// name and its endpoint URL. A grant is only ever sent to the endpoint it
// was issued for, so renaming or re-pointing a server starts afresh.
type TokenKey struct {
	Server   string `json:"server"`
	Resource string `json:"resource"`
}

// Grant is what a TokenStore keeps for one server: the client registration
// and the tokens. Its fields are credentials; String masks them.
type Grant struct {
	// Issuer and TokenURL are the authorization server's, from discovery.
	Issuer   string `json:"issuer,omitempty"`
	TokenURL string `json:"token_url,omitempty"`
	// Resource is the resource indicator the tokens were issued for.
	Resource string `json:"resource,omitempty"`
	// ClientID, ClientSecret and AuthMethod are the client registration
	// (dynamic registration's answer, or the configured client);
	// RedirectURI is the one registered with it.
	ClientID     string `json:"client_id,omitempty"`
	ClientSecret string `json:"client_secret,omitempty"`
	AuthMethod   string `json:"token_endpoint_auth_method,omitempty"`
	RedirectURI  string `json:"redirect_uri,omitempty"`
	// AccessToken, RefreshToken and Expiry are the tokens; Scopes what was
	// asked for and granted.
	AccessToken  string    `json:"access_token,omitempty"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
	Scopes       []string  `json:"scopes,omitempty"`
}

// String describes the grant without its secrets.
func (g Grant) String() string {
	return fmt.Sprintf("mcp.Grant{issuer %q, client %q, scopes %v, access token %s, refresh token %s}", g.Issuer, g.ClientID, g.Scopes, present(g.AccessToken), present(g.RefreshToken))
}

// GoString is String, so %#v cannot print the secrets either.
func (g Grant) GoString() string { return g.String() }

func present(s string) string {
	if s == "" {
		return "absent"
	}
	return "[redacted]"
}

// TokenStore keeps OAuth grants between tasks, where the host says: the
// reference CLI keeps them in a 0600 file under the user's configuration
// directory. Load returns ok false when it holds nothing for key. A store
// is used concurrently by the servers of one catalog and must be safe for
// it.
type TokenStore interface {
	Load(ctx context.Context, key TokenKey) (g Grant, ok bool, err error)
	Save(ctx context.Context, key TokenKey, g Grant) error
}

// MemoryTokenStore is a TokenStore in memory: grants last as long as it
// does. The zero value is ready to use.
type MemoryTokenStore struct {
	mu     sync.Mutex
	grants map[TokenKey]Grant
}

// Load implements TokenStore.
func (m *MemoryTokenStore) Load(_ context.Context, key TokenKey) (Grant, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	g, ok := m.grants[key]
	g.Scopes = slices.Clone(g.Scopes)
	return g, ok, nil
}

// Save implements TokenStore.
func (m *MemoryTokenStore) Save(_ context.Context, key TokenKey, g Grant) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.grants == nil {
		m.grants = map[TokenKey]Grant{}
	}
	g.Scopes = slices.Clone(g.Scopes)
	m.grants[key] = g
	return nil
}

// Authorizer is the host's part of the authorization code grant: the user
// opens the authorization URL and the authorization server redirects the
// browser back to the host. The reference CLI prints the URL and runs a
// loopback redirect listener; an editor would open a browser.
type Authorizer interface {
	// RedirectURI returns the redirect URI the authorization server sends
	// the user back to for server; it is registered with the client.
	RedirectURI(ctx context.Context, server string) (string, error)
	// Authorize has the user open req.URL and returns the query of the
	// redirect that came back (code and state, or error). It is bounded by
	// ctx: the server's startup or operation timeout.
	Authorize(ctx context.Context, req AuthorizationRequest) (url.Values, error)
}

// AuthorizationRequest is one authorization the catalog asks the host to
// have a user grant.
type AuthorizationRequest struct {
	// Server is the configured server's name; Issuer the authorization
	// server's.
	Server string
	Issuer string
	// URL is the authorization URL to open; State the value its redirect
	// must carry back.
	URL   string
	State string
	// Scopes are the scopes asked for (empty: the server's default).
	Scopes []string
}

// ErrAuthorization is the kind of every OAuth failure: discovery,
// registration, the user's authorization, a token request, or a server
// that still refuses the token it asked for.
var ErrAuthorization = errors.New("mcp: authorization failed")

// AuthError is an OAuth failure of one server, with the step that failed
// and why. Its text never holds a token or a secret.
type AuthError struct {
	Server string
	// Step is "discovery", "registration", "authorization", "token",
	// "refresh" or "access".
	Step   string
	Reason string
	Err    error
}

func (e *AuthError) Error() string {
	s := fmt.Sprintf("mcp: server %q: OAuth %s: %s", e.Server, e.Step, e.Reason)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns ErrAuthorization and the cause.
func (e *AuthError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrAuthorization}
	}
	return []error{ErrAuthorization, e.Err}
}
