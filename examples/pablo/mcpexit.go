package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/mcp"
)

// mcpProbe is what starting a deployment's MCP servers found: every
// server's health (each opened as optional, so each is reported, and
// marked required as the deployment configures it), the cleanup's error,
// and an error that kept the servers from being opened at all.
type mcpProbe struct {
	health   []mcp.Health
	closeErr error
	err      error
}

// probeMCPServers starts every configured server of d and closes them all
// without calling a tool: `pablo mcp probe` and `pablo doctor --probe mcp`
// both probe with it.
func probeMCPServers(ctx context.Context, d *pablo.Deployment, h *host) mcpProbe {
	tokens, authorizer, release := h.mcpAuth()
	defer release()
	opts, err := d.MCPOptions(pablo.HostOptions{LookupEnv: h.lookupEnv, MCPTokens: tokens, MCPAuthorizer: authorizer})
	if err != nil {
		return mcpProbe{err: err}
	}
	required := map[string]bool{}
	for i := range opts.Servers {
		required[opts.Servers[i].Name] = opts.Servers[i].Required
		opts.Servers[i].Required = false
	}
	cat, err := mcp.Open(ctx, opts)
	if err != nil {
		return mcpProbe{err: err}
	}
	health := cat.Health()
	if health == nil {
		health = []mcp.Health{}
	}
	for i := range health {
		health[i].Required = required[health[i].Server]
	}
	return mcpProbe{health: health, closeErr: cat.Close()}
}

// serverExit is the exit code one probed server sets, with the finding's
// code: the same for `pablo mcp probe` and `pablo doctor`, and the code
// the doctor's offline checks give the same state (a required server
// denied by policy 7, a credential it needs missing 3). A required
// server that failed to start, negotiate a supported protocol version or
// list its tools, or that serves a pinned tool whose definition changed,
// is 6. An optional server's failure sets nothing: the runtime leaves the
// server out and runs.
func serverExit(s mcp.Health) (int, string) {
	if !s.Required {
		return doctorOK, ""
	}
	switch s.State {
	case mcp.Ready:
		return doctorOK, ""
	case mcp.Degraded:
		admitted, denied := 0, false
		for _, t := range s.Tools {
			if t.Code == mcp.CodeDefinitionChanged {
				return doctorMCP, string(mcp.CodeDefinitionChanged)
			}
			if t.Admitted {
				admitted++
			}
			denied = denied || t.Code == mcp.CodePolicyDenied
		}
		if admitted == 0 && denied {
			// Policy denies every tool it could serve (the rest are out
			// for their schemas): the doctor's policy check says 7.
			return doctorPolicyDenied, "policy_denied"
		}
		// Some tools are out (a schema outside the subset, a task-only
		// tool): by design, the rest serve.
		return doctorOK, ""
	case mcp.Denied:
		return doctorPolicyDenied, "policy_denied"
	case mcp.Failed:
		if s.Code == mcp.CodeCredential {
			return doctorCredential, "credential_unavailable"
		}
	}
	return doctorMCP, "mcp_failed"
}

// exit is the probe's exit code, finding code and detail: the first
// required server that fails (serverExit), else a cleanup failure (always
// 6), else doctorOK. interrupted says the caller's context ended.
func (p mcpProbe) exit(interrupted bool) (int, string, string) {
	if p.err != nil {
		if interrupted {
			return doctorInterrupted, "interrupted", "the probe was interrupted"
		}
		return doctorMCP, "mcp_failed", p.err.Error()
	}
	for _, s := range p.health {
		if code, reason := serverExit(s); code != doctorOK {
			detail := fmt.Sprintf("required server %q is %s", s.Server, s.State)
			if s.State == mcp.Failed {
				detail = fmt.Sprintf("server %q failed", s.Server)
			}
			if s.Reason != "" {
				detail += ": " + oneLine(s.Reason)
			}
			if reason == string(mcp.CodeDefinitionChanged) {
				detail += "; a pinned tool's definition changed"
			}
			return code, reason, detail
		}
	}
	if p.closeErr != nil {
		return doctorMCP, "mcp_cleanup_failed", fmt.Sprintf("cleanup: %v", p.closeErr)
	}
	return doctorOK, "", ""
}

// summary lists each server and its state, optional failures marked.
func (p mcpProbe) summary() string {
	var states []string
	for _, s := range p.health {
		st := fmt.Sprintf("%s %s", s.Server, s.State)
		if !s.Required && s.State != mcp.Ready && s.State != mcp.Degraded {
			st += " (optional: left out)"
		}
		states = append(states, st)
	}
	return strings.Join(states, ", ")
}
