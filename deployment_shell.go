package pablo

import (
	"github.com/pabloagent/pablo/internal/egress"
	"github.com/pabloagent/pablo/internal/shell"
)

// shellRunner builds shell.run for a workspace directory.
// forwarder is HostOptions.EgressForwarder, which network allowlist needs.
func (d *Deployment) shellRunner(workspace, forwarder string) (*shell.Runner, error) {
	opts, err := d.c.ShellOptions(workspace)
	if err != nil {
		return nil, err
	}
	opts.EgressForwarder = forwarder
	// network = "repository-host-only": the allowlist is the hosts of the
	// workspace repository's remotes, read now, once, and shown in every
	// task's snapshot through the sandbox profile.
	if opts.Sandbox, err = opts.Sandbox.ResolveRepositoryHosts(workspace); err != nil {
		return nil, err
	}
	return shell.New(opts)
}

// EgressForwarderMain turns the running binary into the in-sandbox
// forwarder of a network allowlist when it was started as one, and does
// nothing otherwise. A host whose deployment uses network = "allowlist"
// calls it first thing in main and names its own executable in
// HostOptions.EgressForwarder: the sandbox has no network of its own, and
// this forwarder, bound into it, is what carries the command's proxy
// connections to the filtering proxy outside.
func EgressForwarderMain() { egress.ForwarderMain() }
