package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/pabloagent/pablo/mcp"
)

// mcpCommand implements `pablo mcp probe`: start every configured MCP
// server, show its health, negotiated protocol version, discovered tools
// (admitted or denied, and why), their definition digests to pin, and the
// credential references it uses (never values), then close everything.
// No tool is called. It exits as `pablo doctor --probe mcp` does for the
// same servers (serverExit): 0 when every required server is Ready or
// Degraded by design, 7 when policy denies one, 3 when a credential it
// needs is missing, 6 when one failed to start or negotiate, a pinned
// tool's definition changed, or the cleanup failed. An optional server's
// failure is shown, never fails the probe.
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
	probe := probeMCPServers(ctx, d, h)
	if probe.err == nil {
		if p.bools["json"] {
			writeJSON(h, struct {
				Servers []mcp.Health `json:"servers"`
			}{probe.health})
		} else {
			printHealth(h, probe.health)
		}
	}
	if code, reason, detail := probe.exit(ctx.Err() != nil); code != doctorOK {
		return &exitError{code: code, err: fmt.Errorf("mcp probe: %s (%s)", detail, reason)}
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
