package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/pabloagent/pablo/graph"
)

// whyReportVersion is the version of `pablo why --json`.
const whyReportVersion = 1

// whyCommand implements `pablo why CAPABILITY [--probe] [--json]`: why a
// capability is enabled, disabled or unavailable, from the same graph and
// decision function as doctor, policy check and the runtime. Exit 0 when
// it is admitted, 1 when it is not, 2 for bad input.
func whyCommand(ctx context.Context, args []string, h *host) error {
	p, err := parseArgs(args, "why")
	if err != nil {
		return err
	}
	if len(p.args) != 1 {
		return usagef("why takes one CAPABILITY (fs.read, mcp/SERVER/TOOL, ROOT/NAME, a remote, route or model), got %d arguments", len(p.args))
	}
	d, err := loadDeployment(ctx, p, h, nil)
	if err != nil {
		return err
	}
	opts, err := graphOptions(ctx, d, h, p)
	if err != nil {
		return err
	}
	e, err := d.Why(ctx, p.args[0], opts)
	if errors.Is(err, graph.ErrUnknownCapability) {
		return usagef("%v", err)
	}
	if err != nil {
		return err
	}
	if p.bools["json"] {
		writeJSON(h, struct {
			SchemaVersion int `json:"schema_version"`
			*graph.Explanation
		}{whyReportVersion, e})
	} else {
		verdict := "not admitted"
		if e.Admitted {
			verdict = "admitted"
		}
		fmt.Fprintf(h.stdout, "%s: %s (node %s)\n", e.Capability, verdict, e.Node)
		if e.Decision != nil {
			fmt.Fprintf(h.stdout, "  decision: allowed=%t layer %q rule %q: %s\n", e.Decision.Allowed, e.Decision.Layer, e.Decision.RuleID, oneLine(e.Decision.Reason))
		}
		for _, n := range e.Chain {
			fmt.Fprintf(h.stdout, "  %-13s %s\n", n.State, n.ID)
		}
		for _, c := range e.Causes {
			fmt.Fprintf(h.stdout, "  cause %s: %s", c.Code, oneLine(c.Detail))
			if c.Layer != "" {
				fmt.Fprintf(h.stdout, " (layer %q rule %q)", c.Layer, c.Rule)
			}
			fmt.Fprintln(h.stdout)
		}
	}
	if !e.Admitted {
		return &exitError{code: 1}
	}
	return nil
}
