package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/pabloagent/pablo/internal/endpoint"
	"github.com/pabloagent/pablo/internal/textx"
)

// maxMetadataBytes bounds a metadata document or registration answer.
const maxMetadataBytes = 64 << 10

// bearerChallenge is what a server's WWW-Authenticate Bearer challenge
// says (RFC 6750 §3, RFC 9728 §5.1).
type bearerChallenge struct {
	scopes           []string
	resourceMetadata string
	err              string
}

// parseBearerChallenge reads the Bearer challenge of a 401 or 403 answer's
// WWW-Authenticate headers; ok is false when there is none.
func parseBearerChallenge(values []string) (c bearerChallenge, ok bool) {
	for _, v := range values {
		params, found := bearerParams(v)
		if !found {
			continue
		}
		c.scopes = strings.Fields(params["scope"])
		c.resourceMetadata = params["resource_metadata"]
		c.err = params["error"]
		return c, true
	}
	return c, false
}

// bearerParams finds the Bearer scheme in one header value and returns its
// auth-params (quoted strings unescaped). A header may hold several
// challenges; the parameters run until the next scheme.
func bearerParams(v string) (map[string]string, bool) {
	s := v
	for s != "" {
		s = strings.TrimLeft(s, " \t,")
		tok := s
		if i := strings.IndexAny(s, " \t,"); i >= 0 {
			tok = s[:i]
		}
		if tok == "" {
			return nil, false
		}
		s = s[len(tok):]
		if strings.Contains(tok, "=") {
			// A parameter of an earlier scheme: skip its value.
			s = skipParamValue(tok, s)
			continue
		}
		if !strings.EqualFold(tok, "Bearer") {
			continue
		}
		params := map[string]string{}
		for {
			s = strings.TrimLeft(s, " \t,")
			eq := strings.IndexByte(s, '=')
			if eq <= 0 {
				return params, true
			}
			name := strings.TrimSpace(s[:eq])
			if strings.ContainsAny(name, " \t,") {
				// The next scheme begins.
				return params, true
			}
			s = strings.TrimLeft(s[eq+1:], " \t")
			var val string
			if strings.HasPrefix(s, `"`) {
				var sb strings.Builder
				i := 1
				for ; i < len(s) && s[i] != '"'; i++ {
					if s[i] == '\\' && i+1 < len(s) {
						i++
					}
					sb.WriteByte(s[i])
				}
				val = sb.String()
				s = s[min(i+1, len(s)):]
			} else {
				end := strings.IndexAny(s, " \t,")
				if end < 0 {
					end = len(s)
				}
				val, s = s[:end], s[end:]
			}
			params[strings.ToLower(name)] = val
		}
	}
	return nil, false
}

// skipParamValue skips the rest of a "name=value" token whose value may be
// quoted.
func skipParamValue(tok, rest string) string {
	v := tok[strings.IndexByte(tok, '=')+1:]
	if !strings.HasPrefix(v, `"`) || (len(v) > 1 && strings.HasSuffix(v, `"`)) {
		return rest
	}
	for i := 0; i < len(rest); i++ {
		if rest[i] == '\\' {
			i++
			continue
		}
		if rest[i] == '"' {
			return rest[i+1:]
		}
	}
	return ""
}

// resourceMetadata is a protected resource metadata document (RFC 9728).
type resourceMetadata struct {
	Resource             string   `json:"resource"`
	AuthorizationServers []string `json:"authorization_servers"`
	ScopesSupported      []string `json:"scopes_supported"`
}

// serverMetadata is an authorization server metadata document (RFC 8414,
// or OpenID Connect discovery).
type serverMetadata struct {
	Issuer                                     string   `json:"issuer"`
	AuthorizationEndpoint                      string   `json:"authorization_endpoint"`
	TokenEndpoint                              string   `json:"token_endpoint"`
	RegistrationEndpoint                       string   `json:"registration_endpoint"`
	ScopesSupported                            []string `json:"scopes_supported"`
	GrantTypesSupported                        []string `json:"grant_types_supported"`
	CodeChallengeMethodsSupported              []string `json:"code_challenge_methods_supported"`
	TokenEndpointAuthMethodsSupported          []string `json:"token_endpoint_auth_methods_supported"`
	TokenEndpointAuthSigningAlgValuesSupported []string `json:"token_endpoint_auth_signing_alg_values_supported"`
	ClientIDMetadataDocumentSupported          bool     `json:"client_id_metadata_document_supported"`
	IssParameterSupported                      bool     `json:"authorization_response_iss_parameter_supported"`
}

// discovery is what discovery found for one server.
type discovery struct {
	// resource is the resource indicator: the metadata's resource, or the
	// server's URL when the server publishes no metadata (2025-03-26).
	resource string
	// scopes are the protected resource's scopes_supported.
	scopes []string
	meta   serverMetadata
	// legacy says the authorization server was found the 2025-03-26 way:
	// at the MCP server's origin, with default endpoints when it publishes
	// no metadata.
	legacy bool
}

// discover finds the server's protected resource metadata and its
// authorization server's metadata. Every URL it fetches or returns passes
// the endpoint rules, and nothing it fetches carries a credential.
func (o *oauthClient) discover(ctx context.Context, ch bearerChallenge) (*discovery, error) {
	fail := func(reason string, err error) (*discovery, error) {
		return nil, &AuthError{Server: o.server, Step: "discovery", Reason: reason, Err: err}
	}
	server, err := url.Parse(o.endpoint)
	if err != nil {
		return fail("the server URL does not parse", err)
	}
	origin := server.Scheme + "://" + server.Host
	var candidates []string
	if ch.resourceMetadata != "" {
		candidates = []string{ch.resourceMetadata}
	} else {
		if p := strings.TrimSuffix(server.EscapedPath(), "/"); p != "" {
			candidates = append(candidates, origin+"/.well-known/oauth-protected-resource"+p)
		}
		candidates = append(candidates, origin+"/.well-known/oauth-protected-resource")
	}
	var prm resourceMetadata
	found := false
	for _, u := range candidates {
		ok, err := o.fetchJSON(ctx, u, &prm)
		if err != nil {
			return fail("protected resource metadata "+textx.Shorten(u, 200), err)
		}
		if ok {
			found = true
			break
		}
		if ch.resourceMetadata != "" {
			return fail(fmt.Sprintf("the resource_metadata URL %s the server named answered no document", textx.Shorten(u, 200)), nil)
		}
	}
	if !found {
		// A 2025-03-26 server: the authorization server is at the MCP
		// server's origin.
		d := &discovery{resource: o.endpoint, legacy: true}
		ok, err := o.fetchJSON(ctx, origin+"/.well-known/oauth-authorization-server", &d.meta)
		if err != nil {
			return fail("authorization server metadata at the server's origin", err)
		}
		if !ok {
			d.meta = serverMetadata{AuthorizationEndpoint: origin + "/authorize", TokenEndpoint: origin + "/token", RegistrationEndpoint: origin + "/register", CodeChallengeMethodsSupported: []string{"S256"}}
		}
		if d.meta.Issuer == "" {
			d.meta.Issuer = origin
		}
		return d, o.checkMetadata(d)
	}
	if prm.Resource == "" {
		return fail("the protected resource metadata names no resource", nil)
	}
	if !resourceCovers(prm.Resource, o.endpoint) {
		return fail(fmt.Sprintf("the protected resource metadata is for %s, not for the configured server %s; refusing to authorize for another resource", textx.Shorten(prm.Resource, 200), textx.Shorten(o.endpoint, 200)), nil)
	}
	if len(prm.AuthorizationServers) == 0 {
		return fail("the protected resource metadata names no authorization server", nil)
	}
	issuer := prm.AuthorizationServers[0]
	if err := checkDiscoveredURL(issuer, o.allowLoopback); err != nil {
		return fail("authorization server "+textx.Shorten(issuer, 200), err)
	}
	d := &discovery{resource: prm.Resource, scopes: prm.ScopesSupported}
	iu, _ := url.Parse(issuer)
	iorigin := iu.Scheme + "://" + iu.Host
	var metaURLs []string
	if p := strings.TrimSuffix(iu.EscapedPath(), "/"); p != "" {
		metaURLs = []string{iorigin + "/.well-known/oauth-authorization-server" + p, iorigin + "/.well-known/openid-configuration" + p, iorigin + p + "/.well-known/openid-configuration"}
	} else {
		metaURLs = []string{iorigin + "/.well-known/oauth-authorization-server", iorigin + "/.well-known/openid-configuration"}
	}
	for _, u := range metaURLs {
		ok, err := o.fetchJSON(ctx, u, &d.meta)
		if err != nil {
			return fail("authorization server metadata "+textx.Shorten(u, 200), err)
		}
		if ok {
			if strings.TrimSuffix(d.meta.Issuer, "/") != strings.TrimSuffix(issuer, "/") {
				return fail(fmt.Sprintf("the metadata at %s names issuer %q, not %q", textx.Shorten(u, 200), textx.Shorten(d.meta.Issuer, 200), textx.Shorten(issuer, 200)), nil)
			}
			return d, o.checkMetadata(d)
		}
	}
	return fail(fmt.Sprintf("authorization server %s publishes no metadata (tried %s)", textx.Shorten(issuer, 200), strings.Join(metaURLs, ", ")), nil)
}

// checkMetadata applies the endpoint rules to every endpoint the metadata
// names and requires PKCE with S256.
func (o *oauthClient) checkMetadata(d *discovery) error {
	m := &d.meta
	for _, e := range []struct{ name, u string }{{"token_endpoint", m.TokenEndpoint}, {"authorization_endpoint", m.AuthorizationEndpoint}, {"registration_endpoint", m.RegistrationEndpoint}} {
		if e.u == "" {
			continue
		}
		if err := checkDiscoveredURL(e.u, o.allowLoopback); err != nil {
			return &AuthError{Server: o.server, Step: "discovery", Reason: "the authorization server's " + e.name, Err: err}
		}
	}
	if m.TokenEndpoint == "" {
		return &AuthError{Server: o.server, Step: "discovery", Reason: "the authorization server metadata names no token_endpoint"}
	}
	if o.grant() == GrantAuthorizationCode {
		if m.AuthorizationEndpoint == "" {
			return &AuthError{Server: o.server, Step: "discovery", Reason: "the authorization server metadata names no authorization_endpoint"}
		}
		if !contains(m.CodeChallengeMethodsSupported, "S256") {
			return &AuthError{Server: o.server, Step: "discovery", Reason: "the authorization server does not advertise PKCE with S256 (code_challenge_methods_supported), which MCP requires; refusing to proceed"}
		}
	}
	return nil
}

// fetchJSON GETs a metadata document into v. ok is false for an answer
// that is not a 200 JSON document (the caller tries the next location);
// a transport failure, a redirect or a document that does not decode is an
// error.
func (o *oauthClient) fetchJSON(ctx context.Context, u string, v any) (bool, error) {
	if err := checkDiscoveredURL(u, o.allowLoopback); err != nil {
		return false, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set(headerVersion, ProtocolVersion)
	resp, err := o.http.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		drain(resp)
		return false, nil
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/json" && !strings.HasSuffix(mt, "+json") {
		drain(resp)
		return false, nil
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadataBytes+1))
	if err != nil {
		return false, err
	}
	if len(b) > maxMetadataBytes {
		return false, fmt.Errorf("%w: the document is longer than %d bytes", ErrBound, maxMetadataBytes)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return false, fmt.Errorf("the document does not decode: %v", err)
	}
	return true, nil
}

// checkDiscoveredURL applies the endpoint rules to a URL learned from a
// server: absolute, HTTPS (plain HTTP only on loopback when the host
// allows it), no userinfo and no fragment. A query is allowed: an
// authorization endpoint may carry one.
func checkDiscoveredURL(raw string, allowLoopback bool) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fmt.Errorf("%w: %q is not an absolute URL", ErrConfig, textx.Shorten(raw, 200))
	}
	if u.User != nil || u.Fragment != "" {
		return fmt.Errorf("%w: %s must not carry userinfo or a fragment", ErrConfig, textx.Shorten(u.Redacted(), 200))
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if allowLoopback && endpoint.IsLoopback(u) {
			return nil
		}
		return fmt.Errorf("%w: %s must use https; plain http is allowed only on loopback as a host fixture", ErrConfig, textx.Shorten(u.Redacted(), 200))
	}
	return fmt.Errorf("%w: %s: the scheme must be https", ErrConfig, textx.Shorten(u.Redacted(), 200))
}

// resourceCovers reports whether the protected resource named by resource
// covers the server URL: same scheme and host, and the server's path at or
// under the resource's path.
func resourceCovers(resource, server string) bool {
	r, err1 := url.Parse(resource)
	s, err2 := url.Parse(server)
	if err1 != nil || err2 != nil || r.Fragment != "" {
		return false
	}
	if !strings.EqualFold(r.Scheme, s.Scheme) || !strings.EqualFold(hostPort(r), hostPort(s)) {
		return false
	}
	rp, sp := strings.TrimSuffix(r.Path, "/"), strings.TrimSuffix(s.Path, "/")
	return sp == rp || strings.HasPrefix(sp, rp+"/")
}

// hostPort is u's host with its scheme's default port made explicit.
func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	if strings.EqualFold(u.Scheme, "https") {
		return u.Host + ":443"
	}
	return u.Host + ":80"
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
