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
	return sandbox.Profile{Mode: sandbox.Mode(s.Mode), Filesystem: sandbox.Filesystem(s.Filesystem), Network: sandbox.Network(s.Network)}
}

// ceiling is an authority layer's sandbox table as a ceiling (see
// sandbox.Profile.Narrow): what it does not write narrows nothing.
func (s *SandboxOptions) ceiling() sandbox.Profile {
	if s == nil {
		return sandbox.Profile{}
	}
	return s.profile()
}

// checkSandboxes holds the sandbox rules: a writable workspace needs the
// fs.write authority (options.filesystem.write), and only stdio servers
// have a sandbox.
func (d *Deployment) checkSandboxes(o *Options) error {
	write := o.Filesystem.Enabled && o.Filesystem.Write
	if o.Shell.Enabled && o.Shell.Sandbox.Mode != string(sandbox.Off) && o.Shell.Sandbox.Filesystem == string(sandbox.WorkspaceWrite) && !write {
		return &Error{Code: CodeConflict, Option: "/options/shell/sandbox/filesystem",
			Message: `filesystem = "workspace-write" needs the fs.write authority: set options.filesystem.write = true, or use "read-only" or "no-fs"`}
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
		if s.Sandbox != nil && s.Sandbox.Mode != string(sandbox.Off) && s.Sandbox.Filesystem == string(sandbox.WorkspaceWrite) && !write {
			return &Error{Code: CodeConflict, Option: ptr + "/filesystem",
				Message: fmt.Sprintf(`MCP server %q: filesystem = "workspace-write" needs the fs.write authority: set options.filesystem.write = true, or use "read-only" or "no-fs"`, name)}
		}
	}
	return nil
}

// ShellSandbox is the sandbox every shell.run command of this deployment
// runs in: options.shell.sandbox narrowed by every authority layer's
// shell.sandbox. Layers narrow, never widen.
func (d *Deployment) ShellSandbox() sandbox.Profile {
	p := d.Options.Shell.Sandbox.profile().Normalized()
	for _, l := range d.layers {
		p = p.Narrow(l.Shell.Sandbox.ceiling())
	}
	return p
}

// MCPSandbox is the sandbox of the stdio MCP server name, narrowed by every
// authority layer's mcp.sandbox, and the read paths it names (typed paths
// for the caller to resolve; a layer names none).
func (d *Deployment) MCPSandbox(name string) (sandbox.Profile, []PathRef) {
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
