package mcp

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/internal/endpoint"
	"github.com/pabloagent/pablo/internal/textx"
)

// reservedHeaders are the protocol and routing headers a credential header
// may never set.
var reservedHeaders = map[string]bool{
	"host": true, "content-length": true, "content-type": true, "accept": true, "connection": true,
	"transfer-encoding": true, "upgrade": true, "traceparent": true, "tracestate": true, "baggage": true,
	"last-event-id": true, "authorization-mcp": true, "te": true, "trailer": true, "proxy-authorization": true,
	"cookie": true, "origin": true, "keep-alive": true, "proxy-connection": true,
}

// ValidHeaderName reports whether a credential header name is allowed:
// lowercase [a-z0-9-], at most 64 bytes, not starting with "mcp-" (which
// covers Mcp-Session-Id and MCP-Protocol-Version) and not a protocol or
// routing header.
func ValidHeaderName(name string) bool {
	if len(name) == 0 || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return !strings.HasPrefix(name, "mcp-") && !reservedHeaders[name]
}

// checkServer validates one configuration before anything starts.
func checkServer(s *Server, allowLoopback bool) *ServerError {
	bad := func(code Code, format string, args ...any) *ServerError {
		return &ServerError{Server: s.Name, Code: code, Kind: ErrConfig, Reason: fmt.Sprintf(format, args...)}
	}
	if !authority.ValidMCPServerName(s.Name) {
		return bad(CodeServerName, "a server name must be 1..32 bytes of [A-Za-z0-9_.-]")
	}
	switch s.Transport {
	case Stdio:
		if !filepath.IsAbs(s.Command) || len(s.Command) > 4096 {
			return bad(CodeLauncher, "command must be an absolute path of at most 4096 bytes, got %q", textx.Shorten(s.Command, 200))
		}
		if len(s.Args) > MaxArgs {
			return bad(CodeConfigurationBound, "%d args; at most %d are allowed", len(s.Args), MaxArgs)
		}
		total := 0
		for _, a := range s.Args {
			if len(a) > MaxArgBytes {
				return bad(CodeConfigurationBound, "an argument is longer than %d bytes", MaxArgBytes)
			}
			total += len(a)
		}
		if total > MaxArgsTotalBytes {
			return bad(CodeConfigurationBound, "args hold %d bytes; at most %d are allowed", total, MaxArgsTotalBytes)
		}
		if s.Dir != "" && !filepath.IsAbs(s.Dir) {
			return bad(CodeCWD, "the working directory must be resolved to an absolute path, got %q", textx.Shorten(s.Dir, 200))
		}
		if len(s.Env) > MaxEnv {
			return bad(CodeEnvironment, "%d environment variables; at most %d are allowed", len(s.Env), MaxEnv)
		}
		for k := range s.Env {
			if !authority.ValidEnvName(k) {
				return bad(CodeEnvironment, "%q is not an environment variable name", textx.Shorten(k, 80))
			}
		}
		if s.URL != "" || len(s.Headers) > 0 || s.OAuth != nil {
			return bad(CodeEndpoint, "url, headers and oauth are only for transport http")
		}
	case HTTP:
		if err := checkEndpoint(s.URL, allowLoopback); err != nil {
			return bad(CodeEndpoint, "%v", err)
		}
		if len(s.Headers) > MaxHeaders {
			return bad(CodeHeaders, "%d headers; at most %d are allowed", len(s.Headers), MaxHeaders)
		}
		for k := range s.Headers {
			if !ValidHeaderName(k) {
				return bad(CodeHeaders, "header %q must be lowercase [a-z0-9-], at most 64 bytes, not start with mcp- and not be a protocol or routing header", textx.Shorten(k, 80))
			}
		}
		if s.Command != "" || len(s.Args) > 0 || len(s.Env) > 0 {
			return bad(CodeLauncher, "command, args and env are only for transport stdio")
		}
		if s.OAuth != nil {
			if err := s.OAuth.validate(); err != nil {
				return bad(CodeOAuth, "%v", err)
			}
			if _, ok := s.Headers["authorization"]; ok {
				return bad(CodeHeaders, "header authorization is the OAuth access token's: configure oauth or the header, not both")
			}
		}
	default:
		return bad(CodeEndpoint, "transport must be %q or %q, got %q", Stdio, HTTP, textx.Shorten(string(s.Transport), 40))
	}
	return nil
}

// checkEndpoint accepts HTTPS URLs without userinfo, query or fragment, and
// plain HTTP only on a loopback IP when the host allows it.
func checkEndpoint(raw string, allowLoopback bool) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fmt.Errorf("url %q is not an absolute URL", textx.Shorten(raw, 200))
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery {
		return fmt.Errorf("url must not carry userinfo, a query or a fragment")
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if allowLoopback && endpoint.IsLoopback(u) {
			return nil
		}
		return fmt.Errorf("url must use https; plain http is allowed only on loopback (a loopback IP or localhost) as a host fixture")
	}
	return fmt.Errorf("url scheme must be https, got %q", textx.Shorten(u.Scheme, 20))
}
