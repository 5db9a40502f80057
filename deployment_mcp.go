package pablo

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/mcp"
)

// mcpCatalogs returns the per-task opener of the deployment's MCP servers:
// each task gets fresh sessions and fresh credential resolution for the
// servers its authority admits. Working directories are resolved once, here;
// credentials are resolved per task, only for servers the authority admits.
func (d *Deployment) mcpCatalogs(opts HostOptions, set *authority.Set) (func(ctx context.Context, task TaskInfo) ([]ToolCatalog, error), error) {
	o := &d.Options
	names := make([]string, 0, len(o.MCP.Servers))
	for name := range o.MCP.Servers {
		names = append(names, name)
	}
	sort.Strings(names)
	servers := make([]mcp.Server, 0, len(names))
	for _, name := range names {
		s := o.MCP.Servers[name]
		srv := mcp.Server{
			Name: name, Transport: mcp.Transport(s.Transport), Command: s.Command, Args: s.Args,
			Env: s.Env, URL: s.URL, Headers: s.Headers, Required: s.Required, Pins: s.Pins,
			StartupTimeout:   time.Duration(s.StartupTimeoutMS) * time.Millisecond,
			OperationTimeout: time.Duration(s.OperationTimeoutMS) * time.Millisecond,
		}
		if srv.Transport == mcp.Stdio {
			cwd := PathRef{Base: "workspace", Path: "."}
			if s.CWD != nil {
				cwd = *s.CWD
			}
			dir, err := d.ResolvePath(cwd)
			if err != nil {
				return nil, fmt.Errorf("pablo: MCP server %q: resolve cwd %s: %w", name, cwd, err)
			}
			srv.Dir = dir
		}
		servers = append(servers, srv)
	}
	maxOut := int(o.Limits.MaxToolOutputBytes)
	loopback := d.loopbackHTTP
	return func(ctx context.Context, task TaskInfo) ([]ToolCatalog, error) {
		// Fresh credential resolution for every task.
		resolver, err := d.Resolver(authority.ResolverOptions{LookupEnv: opts.LookupEnv, Host: opts.Host})
		if err != nil {
			return nil, err
		}
		cat, err := mcp.Open(ctx, mcp.Options{
			Servers:           servers,
			Authority:         set,
			Resolve:           resolver.Resolve,
			Ledger:            task.Ledger,
			AgentID:           task.AgentID,
			AllowLoopbackHTTP: loopback,
			MaxOutputBytes:    maxOut,
			Now:               opts.Now,
			ClientVersion:     ContractRevision,
			ClientName:        "pablo",
		})
		if err != nil {
			return nil, err
		}
		return []ToolCatalog{cat}, nil
	}, nil
}
