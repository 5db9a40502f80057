package main

import (
	"context"
	"strings"

	"github.com/pabloagent/pablo"
)

// sandbox reports the sandbox every call that runs in a process would get
// (shell.run, each stdio MCP server) and, when one is required, whether
// bubblewrap can make it here (one live check).
func (dr *doctor) sandbox(ctx context.Context, d *pablo.Deployment, bwrap string) {
	c := d.CheckSandbox(ctx, bwrap)
	if len(c.Processes) == 0 {
		dr.ok("sandbox", "nothing runs in a process: shell.run is off and no stdio MCP server is configured")
		return
	}
	desc := strings.Join(c.Processes, "; ")
	switch {
	case !c.Required:
		dr.ok("sandbox", "%s: unconfined, the host's explicit choice", desc)
	case c.Err != nil:
		dr.fail("sandbox", doctorUnsupported, "sandbox_unavailable", desc+": "+c.Err.Error())
	default:
		dr.ok("sandbox", "%s; bubblewrap at %s works here", desc, c.Bubblewrap)
	}
}

// probeSandbox runs the live boundary canaries under shell.run's sandbox
// (the default sandbox when shell.run is off or unconfined) and reports
// each blocked or not (skipped where it cannot be tried here: the terminal
// canaries need perl in the sandbox and a pseudo-terminal).
func (dr *doctor) probeSandbox(ctx context.Context, d *pablo.Deployment, bwrap, forwarder string) {
	if n := dr.failedAmong(probeNeeds("sandbox")...); n != "" {
		dr.skip("probe.sandbox", "the "+n+" check failed; no canary was run")
		return
	}
	probe, err := d.ProbeSandbox(ctx, bwrap)
	if err != nil {
		dr.fail("probe.sandbox", doctorUnsupported, "sandbox_unavailable", err.Error())
		return
	}
	p := probe.Profile
	for _, c := range probe.Canaries {
		if c.Skipped {
			dr.skip("probe.sandbox."+c.Name, "not tried under "+p+": "+c.Detail)
			continue
		}
		if c.Blocked {
			dr.ok("probe.sandbox."+c.Name, "blocked under %s: %s", p, c.Detail)
		} else {
			dr.fail("probe.sandbox."+c.Name, doctorUnsupported, "sandbox_escape", "NOT blocked under "+p+": "+c.Detail)
		}
	}
	dr.probeEgress(ctx, d, bwrap, forwarder)
}

// probeEgress runs the egress canary of network allowlist: the allowed
// loopback fixture reached through the proxy, the other requests refused.
func (dr *doctor) probeEgress(ctx context.Context, d *pablo.Deployment, bwrap, forwarder string) {
	if forwarder == "" {
		dr.skip("probe.egress", "this host binary is no egress forwarder")
		return
	}
	e, err := d.ProbeEgress(ctx, bwrap, forwarder)
	if err != nil {
		dr.fail("probe.egress", doctorUnsupported, "sandbox_unavailable", err.Error())
		return
	}
	if e.Reached {
		dr.ok("probe.egress.allowed", "reached: %s", e.Detail)
	} else {
		dr.fail("probe.egress.allowed", doctorUnsupported, "egress_unreachable", "NOT reached: "+e.Detail)
	}
	for _, c := range e.Canaries {
		if c.Blocked {
			dr.ok("probe.egress."+c.Name, "blocked: %s", c.Detail)
		} else {
			dr.fail("probe.egress."+c.Name, doctorUnsupported, "sandbox_escape", "NOT blocked: "+c.Detail)
		}
	}
}
