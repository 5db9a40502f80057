package main

import (
	"context"
	"fmt"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/a2a"
)

// a2aCommand implements `pablo a2a probe`, the MCP probe's counterpart:
// fetch and admit every configured remote's Agent Card (a public GET, no
// credential, no redirect) and print, per remote, whether it is admitted
// and exactly why not. Nothing is sent to an endpoint and no credential
// is resolved. Exit 0 when every card is admitted, 6 when one is refused.
func a2aCommand(ctx context.Context, args []string, h *host) error {
	if len(args) == 0 || args[0] != "probe" {
		return usagef("usage: pablo a2a probe --config F [--bind NAME=DIR]... [--json]")
	}
	p, err := parseArgs(args[1:], "a2a probe")
	if err != nil {
		return err
	}
	if len(p.args) != 0 {
		return usagef("a2a probe takes no positional arguments")
	}
	d, err := loadDeployment(ctx, p, h, nil)
	if err != nil {
		return err
	}
	opts, err := d.A2AOptions(pablo.HostOptions{LookupEnv: h.lookupEnv})
	if err != nil {
		return err
	}
	// The probe resolves no credential: the card GET never carries one.
	opts.Resolve = nil
	c, err := a2a.NewClient(opts)
	if err != nil {
		return err
	}
	defer c.CloseIdleConnections()
	probes := c.Probe(ctx)
	if p.bools["json"] {
		writeJSON(h, struct {
			Remotes []a2a.Probe `json:"remotes"`
		}{probes})
	} else {
		printProbes(h, probes)
	}
	for _, r := range probes {
		if !r.Admitted {
			return &exitError{code: 6, err: fmt.Errorf("A2A remote %q: card refused (%s): %s", r.Remote, r.Reason, r.Detail)}
		}
	}
	return nil
}

func printProbes(h *host, probes []a2a.Probe) {
	if len(probes) == 0 {
		fmt.Fprintln(h.stdout, "no A2A remotes are configured")
	}
	for _, r := range probes {
		if !r.Admitted {
			fmt.Fprintf(h.stdout, "%s: refused (%s)\n  why: %s\n  card: %s\n  endpoint: %s\n", r.Remote, r.Reason, oneLine(r.Detail), r.CardURL, r.Endpoint)
			continue
		}
		c := r.Card
		fmt.Fprintf(h.stdout, "%s: admitted\n  card: %s (%s, %d bytes)\n  endpoint: %s (A2A %s)\n  name %q, version %q, streaming %v, trace context %v\n",
			r.Remote, r.CardURL, c.Digest, c.Bytes, r.Endpoint, c.ProtocolVersion, c.Name, c.Version, c.Streaming, c.TraceContext)
		if r.BearerCredential != "" {
			fmt.Fprintf(h.stdout, "  bearer: scheme %s <- %s (sent to the endpoint only: %v)\n", r.BearerScheme, r.BearerCredential, c.Bearer)
		}
		for _, s := range c.Skills {
			fmt.Fprintf(h.stdout, "  skill: %q\n", s)
		}
	}
}
