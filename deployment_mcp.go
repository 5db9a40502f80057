package pablo

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/internal/config"
	"github.com/pabloagent/pablo/internal/egress"
	"github.com/pabloagent/pablo/internal/sandbox"
	"github.com/pabloagent/pablo/mcp"
)

// MCPOptions maps the deployment's MCP servers to the options of
// mcp.Open: its servers (working directories resolved, credentials still
// references), its authority, a credential resolver built fresh from host,
// the loopback fixture switch and the tool output bound. Ledger and AgentID
// are left for the caller. `pablo mcp probe` and each task use it.
func (d *Deployment) MCPOptions(host HostOptions) (mcp.Options, error) {
	set, err := d.Authority()
	if err != nil {
		return mcp.Options{}, err
	}
	return d.mcpOptions(host, set, "")
}

// mcpOptions builds the options; remotes is egress.RepositoryRoot's, or "".
func (d *Deployment) mcpOptions(host HostOptions, set *authority.Set, remotes string) (mcp.Options, error) {
	o := &d.c.Options
	names := make([]string, 0, len(o.MCP.Servers))
	for name := range o.MCP.Servers {
		names = append(names, name)
	}
	sort.Strings(names)
	servers := make([]mcp.Server, 0, len(names))
	for _, name := range names {
		s := o.MCP.Servers[name]
		// The host's own copies: a change to what MCPOptions returned
		// must not reach the deployment's options (it is immutable).
		srv := mcp.Server{
			Name: name, Transport: mcp.Transport(s.Transport), Command: s.Command, Args: slices.Clone(s.Args),
			Env: maps.Clone(s.Env), URL: s.URL, Headers: maps.Clone(s.Headers), Required: s.Required, Pins: maps.Clone(s.Pins),
			StartupTimeout:   time.Duration(s.StartupTimeoutMS) * time.Millisecond,
			OperationTimeout: time.Duration(s.OperationTimeoutMS) * time.Millisecond,
		}
		if a := s.OAuth; a != nil {
			srv.OAuth = &mcp.OAuth{Grant: a.Grant, ClientID: a.ClientID, ClientSecret: a.ClientSecret, PrivateKey: a.PrivateKey,
				ClientMetadataURL: a.ClientMetadataURL, Scopes: slices.Clone(a.Scopes),
				IDToken: a.IDToken, IdentityProvider: a.IdentityProvider, IdentityClientID: a.IdentityClientID}
		}
		if srv.Transport == mcp.Stdio {
			cwd := config.PathRef{Base: "workspace", Path: "."}
			if s.CWD != nil {
				cwd = *s.CWD
			}
			dir, err := d.resolvePath(cwd)
			if err != nil {
				return mcp.Options{}, fmt.Errorf("pablo: MCP server %q: resolve cwd %s: %w", name, cwd, err)
			}
			srv.Dir = dir
			profile, reads := d.c.MCPSandbox(name)
			for _, ref := range reads {
				p, err := d.resolvePath(ref)
				if err != nil {
					return mcp.Options{}, fmt.Errorf("pablo: MCP server %q: resolve sandbox read path %s: %w", name, ref, err)
				}
				profile.ReadPaths = append(profile.ReadPaths, p)
			}
			if profile.Network == sandbox.RepositoryHostOnly {
				// Read per task (the options are built for each): the
				// hosts of the workspace repository's remotes.
				workspace, err := d.resolvePath(config.PathRef{Base: "workspace", Path: "."})
				if err != nil {
					return mcp.Options{}, fmt.Errorf("pablo: MCP server %q: network \"repository-host-only\" needs the workspace: %w", name, err)
				}
				if remotes == "" {
					remotes = egress.RepositoryRoot(workspace)
				}
				if profile, err = profile.ResolveRepositoryHosts(remotes); err != nil {
					return mcp.Options{}, fmt.Errorf("pablo: MCP server %q: %w", name, err)
				}
			}
			srv.Sandbox = profile
		}
		servers = append(servers, srv)
	}
	resolver, err := d.Resolver(authority.ResolverOptions{LookupEnv: host.LookupEnv, Host: host.Host, Redact: host.secrets})
	if err != nil {
		return mcp.Options{}, err
	}
	// The servers' roots are the session's workspace, when it has one.
	var roots []string
	if workspace, err := d.resolvePath(config.PathRef{Base: "workspace", Path: "."}); err == nil {
		roots = []string{workspace}
	}
	return mcp.Options{
		Roots:     roots,
		Servers:   servers,
		Authority: set,
		Resolve: d.clientResolve(resolver.Resolve, func(v string) {
			if host.secrets != nil {
				host.secrets.Add(v)
			}
		}),
		AllowLoopbackHTTP: d.c.LoopbackHTTP(),
		Tokens:            host.MCPTokens,
		Authorizer:        host.MCPAuthorizer,
		MaxOutputBytes:    int(o.Limits.MaxToolOutputBytes),
		Clock:             host.Clock,
		Tracer:            host.Tracer,
		// Progress reaches the task as tool.output events on the
		// "progress" stream, bounded like any live output.
		OnProgress: func(ctx context.Context, _ authority.ID, msg string) {
			if out := ToolOutput(ctx); out != nil {
				out("progress", []byte(msg+"\n"))
			}
		},
		ClientName:      "pablo",
		ClientVersion:   config.ContractRevision,
		EgressForwarder: host.EgressForwarder,
	}, nil
}

// mcpCatalogs returns the per-task opener of the deployment's MCP servers:
// each task gets fresh sessions and fresh credential resolution for the
// servers its authority admits. Working directories are resolved once, here.
func (d *Deployment) mcpCatalogs(host HostOptions, set *authority.Set) (func(ctx context.Context, task TaskInfo) ([]ToolCatalog, error), error) {
	if _, err := d.mcpOptions(host, set, ""); err != nil {
		return nil, err
	}
	var remotes string // pinned now, as for shell.run
	if workspace, err := d.resolvePath(config.PathRef{Base: "workspace", Path: "."}); err == nil {
		remotes = egress.RepositoryRoot(workspace)
	}
	return func(ctx context.Context, task TaskInfo) ([]ToolCatalog, error) {
		// Fresh credential resolution for every task: a new resolver.
		opts, err := d.mcpOptions(host, set, remotes)
		if err != nil {
			return nil, err
		}
		opts.Ledger, opts.AgentID, opts.Elicit = task.Ledger, task.AgentID, task.Elicit
		if record := task.Egress; record != nil {
			// The engine records each decision and, during a call of
			// the server's, emits it as that call's tool.egress event.
			opts.OnEgress = func(server string, d authority.EgressDecision) error { return record("mcp/"+server, d) }
		}
		if opts.Elicit == nil {
			// No channel to ask: a server's elicitation is declined, as a
			// person who will not answer would.
			opts.Elicit = declineElicitation
		}
		if task.Roles != nil {
			// The task's roles decide its tools, as the engine's do.
			bound, err := set.WithRolesSet(task.Roles)
			if err != nil {
				return nil, err
			}
			opts.Authority = bound
		}
		if task.MCPServers != nil {
			opts.Servers = slices.DeleteFunc(opts.Servers, func(s mcp.Server) bool { return !slices.Contains(task.MCPServers, s.Name) })
		}
		cat, err := mcp.Open(ctx, opts)
		if err != nil {
			return nil, err
		}
		return []ToolCatalog{cat}, nil
	}, nil
}

// SessionMCPServers are the deployment's MCP servers as a session may
// select them ([SessionOptions].MCPServers): name, command and arguments,
// or URL.
func (d *Deployment) SessionMCPServers() []SessionMCPServer {
	names := make([]string, 0, len(d.c.Options.MCP.Servers))
	for name := range d.c.Options.MCP.Servers {
		names = append(names, name)
	}
	sort.Strings(names)
	out := make([]SessionMCPServer, 0, len(names))
	for _, name := range names {
		s := d.c.Options.MCP.Servers[name]
		out = append(out, SessionMCPServer{Name: name, Command: s.Command, Args: slices.Clone(s.Args), URL: s.URL})
	}
	return out
}

// declineElicitation answers every elicitation of a task that has no
// channel to ask.
func declineElicitation(context.Context, mcp.Elicitation) (mcp.ElicitationResult, error) {
	return mcp.ElicitationResult{Action: mcp.ElicitDecline}, nil
}
