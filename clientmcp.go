package pablo

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/internal/config"
	"github.com/pabloagent/pablo/internal/textx"
	"github.com/pabloagent/pablo/mcp"
)

// A client's MCP servers (an editor's, passed on ACP session/new) run as
// the deployment's own: [Deployment.WithClientMCPServers] adds them to the
// configured servers, so the same server and launcher policy, authority
// layers, sandbox, health and records apply. Their environment and header
// values are the user's own: they never enter the configuration; the
// servers name them by a reserved credential name that no configured
// credential can have (it holds a '/'), and the deployment's resolver
// hands them out, each added to the runtime's known secrets first, so it
// is masked in every event, record and error.

// clientCredentialPrefix starts the reserved credential names of a
// client's environment and header values.
const clientCredentialPrefix = "acp-client/"

// clientEnvName is the form of an environment variable name, as a
// configured server's env keys are checked.
func clientEnvName(s string) bool {
	if len(s) == 0 || len(s) > 128 || '0' <= s[0] && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// checkClientServer validates a client's server definition: a valid name
// no configured server has, an absolute command or an http(s) URL, and
// bounded environment and headers.
func checkClientServer(c SessionMCPServer, configured []SessionMCPServer) error {
	name := textx.Shorten(c.Name, 64)
	switch {
	case !authority.ValidMCPServerName(c.Name):
		return invalid("the MCP server name %q is not 1 to 32 bytes of [A-Za-z0-9_.-]", name)
	case slices.ContainsFunc(configured, func(h SessionMCPServer) bool { return h.Name == c.Name }):
		return invalid("the MCP server %q has the name of a configured server but another definition; rename it", name)
	case (c.Command == "") == (c.URL == ""):
		return invalid("the MCP server %q needs a command (stdio) or a URL (http), not both", name)
	case c.Command != "" && !filepath.IsAbs(c.Command):
		return invalid("the MCP server %q: command must be an absolute path, got %q", name, textx.Shorten(c.Command, 256))
	case len(c.Args) > 64:
		return invalid("the MCP server %q has %d arguments; the limit is 64", name, len(c.Args))
	case len(c.Env) > mcp.MaxEnv:
		return invalid("the MCP server %q sets %d environment variables; the limit is %d", name, len(c.Env), mcp.MaxEnv)
	case len(c.Headers) > 16:
		return invalid("the MCP server %q sets %d headers; the limit is 16", name, len(c.Headers))
	case c.URL == "" && len(c.Headers) > 0:
		return invalid("the MCP server %q is a stdio server and cannot take headers", name)
	case c.Command == "" && len(c.Env) > 0:
		return invalid("the MCP server %q is an HTTP server and cannot take an environment", name)
	}
	if c.URL != "" {
		u, err := url.Parse(c.URL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return invalid("the MCP server %q: url must be an http or https URL", name)
		}
	}
	for k, v := range c.Env {
		if !clientEnvName(k) {
			return invalid("the MCP server %q: %q is not an environment variable name", name, textx.Shorten(k, 64))
		}
		if len(v) > authority.MaxSecretBytes {
			return invalid("the MCP server %q: the value of %s is over %d bytes", name, k, authority.MaxSecretBytes)
		}
	}
	for k, v := range c.Headers {
		if k == "" || strings.ContainsAny(k, " :\r\n") || len(v) > authority.MaxSecretBytes || strings.ContainsAny(v, "\r\n") {
			return invalid("the MCP server %q: header %q is not a valid header", name, textx.Shorten(k, 64))
		}
	}
	return nil
}

func cloneServer(c SessionMCPServer) SessionMCPServer {
	c.Args, c.Env, c.Headers = slices.Clone(c.Args), maps.Clone(c.Env), maps.Clone(c.Headers)
	return c
}

// WithClientMCPServers returns a deployment that also configures servers,
// the MCP servers an ACP client defined for its session, as if the host
// had: under options.mcp's policies and every authority layer (which can
// forbid or bound them by name, launcher and tool), each stdio server in
// options.interfaces.acp.client_mcp_sandbox narrowed by the layers'
// mcp.sandbox ceilings, its working directory the workspace. Their
// environment and header values never enter the configuration, its
// fingerprint or any record (see the top of this file). It fails with a
// *deployment.Error unless options.interfaces.acp.client_mcp_servers is true,
// and on a definition the session handler would refuse.
func (d *Deployment) WithClientMCPServers(servers []SessionMCPServer) (*Deployment, error) {
	if len(servers) == 0 {
		return d, nil
	}
	if !d.c.Options.Interfaces.ACP.ClientMCPServers {
		return nil, &config.Error{Code: config.CodeInvalidValue, Option: "/options/interfaces/acp/client_mcp_servers",
			Message: "the deployment runs no client's MCP servers: set options.interfaces.acp.client_mcp_servers = true to run them under its policy and sandbox"}
	}
	c := *d.c
	c.Options = config.Clone(d.c.Options)
	if c.Options.MCP.Servers == nil {
		c.Options.MCP.Servers = map[string]config.MCPServer{}
	}
	configured := d.SessionMCPServers()
	secrets := maps.Clone(d.clientSecrets)
	if secrets == nil {
		secrets = map[string]clientSecret{}
	}
	for _, s := range servers {
		if err := checkClientServer(s, configured); err != nil {
			return nil, &config.Error{Code: config.CodeInvalidValue, Option: "/options/mcp/servers/" + s.Name, Message: err.(*SessionError).Message}
		}
		if _, dup := c.Options.MCP.Servers[s.Name]; dup {
			return nil, &config.Error{Code: config.CodeConflict, Option: "/options/mcp/servers/" + s.Name, Message: fmt.Sprintf("the MCP server %q is defined twice", s.Name)}
		}
		srv := config.MCPServer{Transport: "stdio", Command: s.Command, Args: slices.Clone(s.Args), URL: s.URL,
			Sandbox: cloneSandbox(c.Options.Interfaces.ACP.ClientMCPSandbox)}
		if s.URL != "" {
			srv.Transport, srv.Sandbox = "http", nil
		}
		for k, v := range s.Env {
			ref := clientCredentialPrefix + s.Name + "/env/" + k
			if srv.Env == nil {
				srv.Env = map[string]string{}
			}
			srv.Env[k], secrets[ref] = ref, clientSecret{value: v, dest: "mcp:" + s.Name + ":env:" + k}
		}
		for k, v := range s.Headers {
			ref := clientCredentialPrefix + s.Name + "/headers/" + k
			if srv.Headers == nil {
				srv.Headers = map[string]string{}
			}
			srv.Headers[k], secrets[ref] = ref, clientSecret{value: v, dest: "mcp:" + s.Name + ":header:" + k}
		}
		c.Options.MCP.Servers[s.Name] = srv
	}
	out := *d
	out.c, out.clientSecrets = &c, secrets
	return &out, nil
}

// clientSecret is one of a client's values and the one destination it
// is for.
type clientSecret struct{ value, dest string }

func cloneSandbox(s *config.SandboxOptions) *config.SandboxOptions {
	if s == nil {
		return nil
	}
	c := *s
	c.ReadPaths = slices.Clone(s.ReadPaths)
	return &c
}

// clientResolve resolves the reserved names of a client's values and
// passes every other name to resolve. Each client value is added to
// secrets before it is handed out.
func (d *Deployment) clientResolve(resolve func(context.Context, string, authority.Consumer, string) (authority.Secret, error), known func(string)) func(context.Context, string, authority.Consumer, string) (authority.Secret, error) {
	if len(d.clientSecrets) == 0 {
		return resolve
	}
	return func(ctx context.Context, name string, consumer authority.Consumer, dest string) (authority.Secret, error) {
		if !strings.HasPrefix(name, clientCredentialPrefix) {
			return resolve(ctx, name, consumer, dest)
		}
		v, ok := d.clientSecrets[name]
		// Bound to its own server and variable: a reference another
		// server or variable names is not one of its values.
		if !ok || v.dest != dest {
			return authority.Secret{}, &authority.CredentialError{Name: name, Consumer: consumer, Destination: dest, Reason: "not a value this server's client gave"}
		}
		known(v.value)
		return authority.NewSecret(v.value), nil
	}
}

// WorkspaceRoots are options.interfaces.acp.workspace_roots resolved to
// canonical directories: where an ACP session's working directory may be
// besides the workspace. A root that does not resolve is an error.
func (d *Deployment) WorkspaceRoots() ([]string, error) {
	var out []string
	for _, ref := range d.c.Options.Interfaces.ACP.WorkspaceRoots {
		p, err := d.resolvePath(ref)
		if err != nil {
			return nil, err
		}
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		out = append(out, p)
	}
	return out, nil
}
