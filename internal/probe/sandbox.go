package probe

import (
	"context"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/deployment"
	"github.com/pabloagent/pablo/internal/config"
	"github.com/pabloagent/pablo/internal/sandbox"
)

// Confined is one thing that runs in a process, with its sandbox: "mcp/NAME"
// and the stdio server's profile as a runtime launches it.
type Confined struct {
	Name    string
	Profile sandbox.Profile
}

// Sandbox reports the sandbox shell.run (when c enables it) and each of
// servers would get and, when one is confined, whether bubblewrap at bwrap
// (empty: the default path) can make it here: one live check.
func Sandbox(ctx context.Context, c *config.Deployment, servers []Confined, bwrap string) deployment.SandboxCheck {
	var out deployment.SandboxCheck
	add := func(name string, p sandbox.Profile) {
		out.Processes = append(out.Processes, name+" "+p.String())
		out.Required = out.Required || p.Mode != sandbox.Off
	}
	for _, t := range c.NativeTools() {
		if t == authority.ShellRun {
			add("shell.run", c.ShellSandbox())
		}
	}
	for _, s := range servers {
		add(s.Name, s.Profile)
	}
	if !out.Required {
		return out
	}
	l := sandbox.NewLauncher(bwrap)
	if err := l.Ready(ctx); err != nil {
		out.Err = err
		return out
	}
	out.Bubblewrap = l.Path()
	return out
}

// Canaries runs the live boundary canaries under shell.run's sandbox, or
// the default sandbox when shell.run is off or unconfined, with bubblewrap
// at bwrap. The error says why they could not run at all.
func Canaries(ctx context.Context, c *config.Deployment, bwrap string) (deployment.SandboxProbe, error) {
	p := c.ShellSandbox()
	if p.Mode == sandbox.Off {
		p = sandbox.Profile{}
	}
	if p.Network == sandbox.Allowlist || p.Network == sandbox.RepositoryHostOnly {
		// What the proxy lets out is the egress canary's to show
		// (Deployment.ProbeEgress); these run in the same namespace
		// without it.
		p.Network, p.Allow = sandbox.Deny, nil
	}
	out := deployment.SandboxProbe{Profile: p.String()}
	canaries, err := sandbox.Probe(ctx, sandbox.NewLauncher(bwrap), p)
	if err != nil {
		return out, err
	}
	for _, c := range canaries {
		out.Canaries = append(out.Canaries, deployment.SandboxCanary(c))
	}
	return out, nil
}
