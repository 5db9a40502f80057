package pablo

import (
	"context"

	"github.com/pabloagent/pablo/internal/egress"
	"github.com/pabloagent/pablo/internal/engine"
	"github.com/pabloagent/pablo/internal/redact"
	"github.com/pabloagent/pablo/internal/sandbox"
	"github.com/pabloagent/pablo/internal/shell"
)

// shellRunner builds shell.run for a workspace directory; remotes is
// egress.RepositoryRoot's. forwarder is HostOptions.EgressForwarder.
func (d *Deployment) shellRunner(workspace, remotes, forwarder string) (*shell.Runner, error) {
	opts, err := d.c.ShellOptions(workspace)
	if err != nil {
		return nil, err
	}
	opts.EgressForwarder = forwarder
	// network = "repository-host-only": the allowlist is the hosts of the
	// workspace repository's remotes, read now (at each task's start: see
	// taskShellCatalogs) and shown in the task's snapshot through the
	// sandbox profile.
	if opts.Sandbox, err = opts.Sandbox.ResolveRepositoryHosts(remotes); err != nil {
		return nil, err
	}
	return shell.New(opts)
}

// remotesPinnedPerTask reports a shell.run whose network is
// repository-host-only: its runner is built for each task, when the task
// starts (taskShellCatalogs), so each task reads the remotes then and a
// command that adds a remote widens no running task.
func (d *Deployment) remotesPinnedPerTask() bool {
	p := d.c.ShellSandbox().Normalized()
	return d.c.Options.Shell.Enabled && p.Mode != sandbox.Off && p.Network == sandbox.RepositoryHostOnly
}

// taskShellCatalogs chains to prev an opener that builds shell.run for
// each task (remotesPinnedPerTask), reading the remotes as the task starts.
func (d *Deployment) taskShellCatalogs(forwarder string, secrets *redact.Set, prev func(context.Context, TaskInfo) ([]ToolCatalog, error)) (func(context.Context, TaskInfo) ([]ToolCatalog, error), error) {
	dir, err := d.Workspace()
	if err != nil {
		return nil, err
	}
	pol, err := d.c.ShellPolicy()
	if err != nil {
		return nil, err
	}
	// The repository holding the workspace now (egress.RepositoryRoot).
	remotes := egress.RepositoryRoot(dir)
	if _, err := d.shellRunner(dir, remotes, forwarder); err != nil {
		// What the first task would meet, told when the runtime is built.
		return nil, err
	}
	return func(ctx context.Context, task TaskInfo) ([]ToolCatalog, error) {
		var cats []ToolCatalog
		if prev != nil {
			more, err := prev(ctx, task)
			cats = append(cats, more...)
			if err != nil {
				return cats, err
			}
		}
		runner, err := d.shellRunner(dir, remotes, forwarder)
		if err != nil {
			return cats, err
		}
		return append(cats, engine.NewShellCatalog(runner, secrets, pol != nil)), nil
	}, nil
}

// EgressForwarderMain turns the running binary into the in-sandbox
// forwarder of a network allowlist when it was started as one, and does
// nothing otherwise. A host whose deployment uses network = "allowlist"
// calls it first thing in main and names its own executable in
// HostOptions.EgressForwarder: the sandbox has no network of its own, and
// this forwarder, bound into it, is what carries the command's proxy
// connections to the filtering proxy outside.
func EgressForwarderMain() { egress.ForwarderMain() }
