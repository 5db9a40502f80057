package main

import (
	"context"
	"strings"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/internal/sandbox"
	"github.com/pabloagent/pablo/mcp"
)

// sandbox reports the sandbox every call that runs in a process would get
// (shell.run, each stdio MCP server) and, when one is required, whether
// bubblewrap can make it here (one live check); it returns the launcher it
// checked (bwrap, empty for the default path), nil when nothing needs one.
func (dr *doctor) sandbox(ctx context.Context, d *pablo.Deployment, bwrap string) *sandbox.Launcher {
	var parts []string
	required := false
	for _, t := range d.NativeTools() {
		if t == authority.ShellRun {
			p := d.ShellSandbox()
			parts = append(parts, "shell.run "+p.String())
			required = required || p.Mode != sandbox.Off
		}
	}
	if opts, err := d.MCPOptions(pablo.HostOptions{}); err == nil {
		for _, s := range opts.Servers {
			if s.Transport == mcp.Stdio {
				p := s.Sandbox.Normalized()
				parts = append(parts, "mcp/"+s.Name+" "+p.String())
				required = required || p.Mode != sandbox.Off
			}
		}
	}
	if len(parts) == 0 {
		dr.ok("sandbox", "nothing runs in a process: shell.run is off and no stdio MCP server is configured")
		return nil
	}
	desc := strings.Join(parts, "; ")
	if !required {
		dr.ok("sandbox", "%s: unconfined, the host's explicit choice", desc)
		return nil
	}
	l := sandbox.NewLauncher(bwrap)
	if err := l.Ready(ctx); err != nil {
		dr.fail("sandbox", doctorUnsupported, "sandbox_unavailable", desc+": "+err.Error())
		return nil
	}
	dr.ok("sandbox", "%s; bubblewrap at %s works here", desc, l.Path())
	return l
}

// probeSandbox runs the live boundary canaries under shell.run's sandbox
// (the default sandbox when shell.run is off or unconfined) and reports
// each blocked or not (skipped where it cannot be tried here: the terminal
// canaries need perl in the sandbox and a pseudo-terminal).
func (dr *doctor) probeSandbox(ctx context.Context, d *pablo.Deployment, l *sandbox.Launcher, bwrap string) {
	if dr.failed() {
		dr.skip("probe.sandbox", "an earlier check failed; no canary was run")
		return
	}
	if l == nil {
		l = sandbox.NewLauncher(bwrap)
	}
	p := d.ShellSandbox()
	if p.Mode == sandbox.Off {
		p = sandbox.Profile{}
	}
	canaries, err := sandbox.Probe(ctx, l, p)
	if err != nil {
		dr.fail("probe.sandbox", doctorUnsupported, "sandbox_unavailable", err.Error())
		return
	}
	for _, c := range canaries {
		if c.Skipped {
			dr.skip("probe.sandbox."+c.Name, "not tried under "+p.String()+": "+c.Detail)
			continue
		}
		if c.Blocked {
			dr.ok("probe.sandbox."+c.Name, "blocked under %s: %s", p, c.Detail)
		} else {
			dr.fail("probe.sandbox."+c.Name, doctorUnsupported, "sandbox_escape", "NOT blocked under "+p.String()+": "+c.Detail)
		}
	}
}
