package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/mcp"
)

// mcpCommand implements `pablo mcp probe`: start every configured MCP
// server, show its health, negotiated protocol version, discovered tools
// (admitted or denied, and why), their definition digests to pin, and the
// credential references it uses (never values), then close everything.
// No tool is called. Exit 0 when every server is Ready or Degraded by
// design, 6 when one failed to start, negotiate or clean up.
func mcpCommand(ctx context.Context, args []string, h *host) error {
	if len(args) == 0 || args[0] != "probe" {
		return usagef("usage: pablo mcp probe --config F [--bind NAME=DIR]... [--json]")
	}
	p, err := parseArgs(args[1:], "mcp probe")
	if err != nil {
		return err
	}
	if len(p.args) != 0 {
		return usagef("mcp probe takes no positional arguments")
	}
	d, err := loadDeployment(ctx, p, h, nil)
	if err != nil {
		return err
	}
	opts, err := d.MCPOptions(pablo.HostOptions{LookupEnv: h.lookupEnv})
	if err != nil {
		return err
	}
	// A probe shows every server, so none is required while it opens them;
	// the report still says which ones the deployment requires.
	required := map[string]bool{}
	for i := range opts.Servers {
		required[opts.Servers[i].Name] = opts.Servers[i].Required
		opts.Servers[i].Required = false
	}
	cat, err := mcp.Open(ctx, opts)
	if err != nil {
		return &exitError{code: 6, err: err}
	}
	health := cat.Health()
	if health == nil {
		health = []mcp.Health{}
	}
	for i := range health {
		health[i].Required = required[health[i].Server]
	}
	closeErr := cat.Close()
	if p.bools["json"] {
		writeJSON(h, struct {
			Servers []mcp.Health `json:"servers"`
		}{health})
	} else {
		printHealth(h, health)
	}
	if closeErr != nil {
		return &exitError{code: 6, err: fmt.Errorf("MCP cleanup: %w", closeErr)}
	}
	for _, s := range health {
		if s.State == mcp.Failed {
			return &exitError{code: 6, err: fmt.Errorf("MCP server %q failed: %s", s.Server, s.Reason)}
		}
	}
	return nil
}

func printHealth(h *host, health []mcp.Health) {
	if len(health) == 0 {
		fmt.Fprintln(h.stdout, "no MCP servers are configured")
	}
	for _, s := range health {
		fmt.Fprintf(h.stdout, "%s (%s): %s", s.Server, s.Transport, s.State)
		if s.Version != "" {
			fmt.Fprintf(h.stdout, ", protocol %s", s.Version)
		}
		fmt.Fprintln(h.stdout)
		if s.Reason != "" {
			fmt.Fprintf(h.stdout, "  reason: %s\n", oneLine(s.Reason))
		}
		for _, c := range s.Credentials {
			fmt.Fprintf(h.stdout, "  credential: %s %s <- %s\n", c.Kind, c.Name, c.Credential)
		}
		for _, t := range s.Tools {
			verdict := "admitted"
			if !t.Admitted {
				verdict = "unavailable"
				if t.Code == mcp.CodePolicyDenied {
					verdict = "denied"
				}
			}
			fmt.Fprintf(h.stdout, "  %s %s\n    pin: %s = %q\n", verdict, t.ID, t.Name, t.Digest)
			if t.RuleID != "" {
				fmt.Fprintf(h.stdout, "    rule: %s (layer %s)\n", t.RuleID, t.Layer)
			}
			if !t.Admitted && t.Reason != "" {
				fmt.Fprintf(h.stdout, "    why: %s\n", oneLine(t.Reason))
			}
		}
	}
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }
