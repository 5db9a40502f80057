package pablo

import (
	"context"
	"errors"
	"path/filepath"

	"github.com/pabloagent/pablo/deployment"
	"github.com/pabloagent/pablo/internal/probe"
	"github.com/pabloagent/pablo/internal/sandbox"
	"github.com/pabloagent/pablo/mcp"
)

// CheckSandbox reports the sandbox every call that runs in a process would
// get (shell.run, each stdio MCP server) and, when one is required,
// whether bubblewrap at bwrap (empty: the default path) can make it here:
// one live check. It is `pablo doctor`'s sandbox line.
func (d *Deployment) CheckSandbox(ctx context.Context, bwrap string) deployment.SandboxCheck {
	var servers []probe.Confined
	if opts, err := d.MCPOptions(HostOptions{}); err == nil {
		for _, s := range opts.Servers {
			if s.Transport == mcp.Stdio {
				servers = append(servers, probe.Confined{Name: "mcp/" + s.Name, Profile: s.Sandbox.Normalized()})
			}
		}
	}
	return probe.Sandbox(ctx, d.c, servers, bwrap)
}

// ErrSandboxProbe is the kind of the error [Deployment.ProbeSandbox]
// returns when it could not run the canaries at all (bubblewrap does not
// work here, no temporary directory).
var ErrSandboxProbe = errors.New("pablo: the sandbox probe could not run")

// ProbeSandbox runs the live boundary canaries (a write outside the
// workspace, a read of the host's environment and of a root-only file, a
// loopback connection, a process that outlives the call, terminal input
// injection) under shell.run's sandbox, or the default sandbox when
// shell.run is off or unconfined, with bubblewrap at bwrap (empty: the
// default path). A canary that is not blocked is an escape. It is
// `pablo doctor --probe sandbox`.
func (d *Deployment) ProbeSandbox(ctx context.Context, bwrap string) (deployment.SandboxProbe, error) {
	out, err := probe.Canaries(ctx, d.c, bwrap)
	if err != nil {
		return out, &sandboxProbeError{err}
	}
	return out, nil
}

// ProbeEgress runs the egress canary of network allowlist with bubblewrap
// at bwrap (empty: the default path) and forwarder, the host's own
// executable that calls EgressForwarderMain: in a sandbox under an
// allowlist of its own, a request through the proxy for an allowed
// loopback fixture must be answered, and one for a port no entry names,
// one for the allowed fixture by IP literal, and a connection past the
// proxy must each fail. Nothing leaves the host. It is part of `pablo
// doctor --probe sandbox`; the error wraps ErrSandboxProbe.
func (d *Deployment) ProbeEgress(ctx context.Context, bwrap, forwarder string) (deployment.EgressProbe, error) {
	if !filepath.IsAbs(forwarder) {
		return deployment.EgressProbe{}, &sandboxProbeError{errors.New("the egress canary needs the absolute path of the host's own executable, which calls pablo.EgressForwarderMain first thing in main")}
	}
	p, err := sandbox.ProbeEgress(ctx, sandbox.NewLauncher(bwrap), forwarder)
	if err != nil {
		return deployment.EgressProbe{}, &sandboxProbeError{err}
	}
	out := deployment.EgressProbe{Reached: p.Reached, Detail: p.Detail}
	for _, c := range p.Canaries {
		out.Canaries = append(out.Canaries, deployment.SandboxCanary(c))
	}
	return out, nil
}

// sandboxProbeError says why the canaries could not run, in the cause's
// own words; errors.Is(err, ErrSandboxProbe) holds.
type sandboxProbeError struct{ err error }

func (e *sandboxProbeError) Error() string        { return e.err.Error() }
func (e *sandboxProbeError) Unwrap() error        { return e.err }
func (e *sandboxProbeError) Is(target error) bool { return target == ErrSandboxProbe }
