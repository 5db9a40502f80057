package config

import (
	"fmt"

	"github.com/pabloagent/pablo/internal/sandbox"
)

// profile is the sandbox profile a table writes (read paths left out: they
// are typed paths the caller resolves).
func (s *SandboxOptions) profile() sandbox.Profile {
	if s == nil {
		return sandbox.Profile{}
	}
	return sandbox.Profile{Mode: sandbox.Mode(s.Mode), Filesystem: sandbox.Filesystem(s.Filesystem), Network: sandbox.Network(s.Network), Allow: s.Allow}
}

// ceiling is an authority layer's sandbox table as a ceiling (see
// sandbox.Profile.Narrow): what it does not write narrows nothing.
func (s *SandboxOptions) ceiling() sandbox.Profile {
	if s == nil {
		return sandbox.Profile{}
	}
	return s.profile()
}

// writes reports a filesystem scope that lets the process write.
func writes(fs string) bool {
	return fs == string(sandbox.WorkspaceWrite) || fs == string(sandbox.RepoWrite)
}

// checkSandboxes holds the sandbox rules: a writable workspace needs the
// fs.write authority (options.filesystem.write), and only stdio servers
// have a sandbox.
func (d *Deployment) checkSandboxes(o *Options) error {
	write := o.Filesystem.Enabled && o.Filesystem.Write
	if o.Shell.Enabled && o.Shell.Sandbox.Mode != string(sandbox.Off) && writes(o.Shell.Sandbox.Filesystem) && !write {
		return &Error{Code: CodeConflict, Option: "/options/shell/sandbox/filesystem",
			Message: fmt.Sprintf(`filesystem = %q needs the fs.write authority: set options.filesystem.write = true, or use "read-only" or "no-fs"`, o.Shell.Sandbox.Filesystem)}
	}
	for _, name := range sortedKeysOf(o.MCP.Servers) {
		s := o.MCP.Servers[name]
		ptr := "/options/mcp/servers" + pointer(name) + "/sandbox"
		if s.Transport != "stdio" {
			if s.Sandbox != nil {
				return invalid(ptr, "MCP server %q: sandbox is only for transport = \"stdio\"", name)
			}
			continue
		}
		if s.Sandbox != nil && s.Sandbox.Mode != string(sandbox.Off) && writes(s.Sandbox.Filesystem) && !write {
			return &Error{Code: CodeConflict, Option: ptr + "/filesystem",
				Message: fmt.Sprintf(`MCP server %q: filesystem = %q needs the fs.write authority: set options.filesystem.write = true, or use "read-only" or "no-fs"`, name, s.Sandbox.Filesystem)}
		}
	}
	return nil
}

// ShellSandbox is the sandbox every shell.run command of this deployment
// runs in: options.shell.sandbox narrowed by every authority layer's
// shell.sandbox. Layers narrow, never widen.
//
// Under a deployment that uses network repository-host-only anywhere (this
// sandbox or a stdio server's), it keeps the repository's git config
// read-only (sandbox.Profile.KeepGitConfig): a command that wrote a remote
// would widen the next task's allowlist.
func (d *Deployment) ShellSandbox() sandbox.Profile {
	p := d.shellSandbox()
	p.KeepGitConfig = p.Mode != sandbox.Off && d.UsesRepositoryHostOnly()
	return p
}

func (d *Deployment) shellSandbox() sandbox.Profile {
	p := d.Options.Shell.Sandbox.profile().Normalized()
	for _, l := range d.layers {
		p = p.Narrow(l.Shell.Sandbox.ceiling())
	}
	return p
}

// UsesRepositoryHostOnly reports a deployment some of whose sandboxes
// (shell.run's, a stdio MCP server's, as the layers leave them) has
// network repository-host-only: its fs tools and every sandbox keep the
// repository's git config out of the task's reach.
func (d *Deployment) UsesRepositoryHostOnly() bool {
	if p := d.shellSandbox(); d.Options.Shell.Enabled && p.Mode != sandbox.Off && p.Network == sandbox.RepositoryHostOnly {
		return true
	}
	for name, s := range d.Options.MCP.Servers {
		if s.Transport != "stdio" {
			continue
		}
		if p, _ := d.mcpSandbox(name); p.Mode != sandbox.Off && p.Network == sandbox.RepositoryHostOnly {
			return true
		}
	}
	return false
}

// MCPSandbox is the sandbox of the stdio MCP server name, narrowed by every
// authority layer's mcp.sandbox, and the read paths it names (typed paths
// for the caller to resolve; a layer names none).
// Like ShellSandbox, it keeps the git config read-only under a deployment
// that uses repository-host-only anywhere.
func (d *Deployment) MCPSandbox(name string) (sandbox.Profile, []PathRef) {
	p, reads := d.mcpSandbox(name)
	p.KeepGitConfig = p.Mode != sandbox.Off && d.UsesRepositoryHostOnly()
	return p, reads
}

func (d *Deployment) mcpSandbox(name string) (sandbox.Profile, []PathRef) {
	s := d.Options.MCP.Servers[name].Sandbox
	p := s.profile().Normalized()
	for _, l := range d.layers {
		p = p.Narrow(l.MCP.Sandbox.ceiling())
	}
	if s == nil || p.Mode == sandbox.Off {
		return p, nil
	}
	return p, s.ReadPaths
}

// SandboxNarrowing is an authority layer lowering what a sandbox table
// asks for: the process gets less than the deployment requested (the
// network it asked for, a writable workspace), so what needs it fails.
type SandboxNarrowing struct {
	// Layer is the ID of the first authority layer that lowers it.
	Layer string
	// Requested is what the options table asks for; Effective is what
	// the layers leave.
	Requested, Effective sandbox.Profile
}

// ShellSandboxNarrowing reports the first authority layer whose
// shell.sandbox ceiling lowers options.shell.sandbox; ok is false when
// none does (or the table asks for no sandbox).
func (d *Deployment) ShellSandboxNarrowing() (SandboxNarrowing, bool) {
	var ceilings []sandboxCeiling
	for _, l := range d.layers {
		ceilings = append(ceilings, sandboxCeiling{l.ID, l.Shell.Sandbox.ceiling()})
	}
	return narrowing(d.Options.Shell.Sandbox.profile(), ceilings)
}

// MCPSandboxNarrowing is ShellSandboxNarrowing for the stdio MCP server
// name and the layers' mcp.sandbox ceilings.
func (d *Deployment) MCPSandboxNarrowing(name string) (SandboxNarrowing, bool) {
	var ceilings []sandboxCeiling
	for _, l := range d.layers {
		ceilings = append(ceilings, sandboxCeiling{l.ID, l.MCP.Sandbox.ceiling()})
	}
	return narrowing(d.Options.MCP.Servers[name].Sandbox.profile(), ceilings)
}

type sandboxCeiling struct {
	layer   string
	ceiling sandbox.Profile
}

// narrowing finds the first ceiling that lowers the filesystem or network
// scope requested asks for. A table that turns the sandbox off asks for
// no scope, so a layer turning it on lowers nothing it asked for.
func narrowing(requested sandbox.Profile, ceilings []sandboxCeiling) (SandboxNarrowing, bool) {
	requested = requested.Normalized()
	if requested.Mode == sandbox.Off {
		return SandboxNarrowing{}, false
	}
	p := requested
	for _, c := range ceilings {
		q := p.Narrow(c.ceiling)
		if q.Filesystem != p.Filesystem || q.Network != p.Network {
			eff := q
			for _, rest := range ceilings {
				eff = eff.Narrow(rest.ceiling)
			}
			return SandboxNarrowing{Layer: c.layer, Requested: requested, Effective: eff}, true
		}
		p = q
	}
	return SandboxNarrowing{}, false
}
