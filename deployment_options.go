package pablo

import (
	"maps"
	"slices"

	"github.com/pabloagent/pablo/deployment"
	"github.com/pabloagent/pablo/internal/config"
)

// Options returns the read-only view of the resolved options a host reads
// (the interfaces, trace, OpenTelemetry, Skills, MCP and A2A groups), field
// names following the TOML keys. It is a deep copy: changing any of it (a
// map entry, a slice element) changes nothing of the deployment, its
// fingerprint or what a runtime built from it enforces.
func (d *Deployment) Options() deployment.Options {
	o := d.c.Options
	v := deployment.Options{
		Interfaces: deployment.Interfaces{CLIOutput: o.Interfaces.CLIOutput, ACP: deployment.ACP{
			MaxSessions: o.Interfaces.ACP.MaxSessions, ClientMCPServers: o.Interfaces.ACP.ClientMCPServers,
			WorkspaceRoots: slices.Clone(o.Interfaces.ACP.WorkspaceRoots),
		}},
		Trace: deployment.Trace{Path: pathRef(o.Trace.Path), CaptureContent: o.Trace.CaptureContent, MaxBytes: o.Trace.MaxBytes},
		OTel: deployment.OTel{
			Exporter: o.OTel.Exporter, SDKDisabled: o.OTel.SDKDisabled, Endpoint: o.OTel.Endpoint, Protocol: o.OTel.Protocol,
			Headers: o.OTel.Headers, Compression: o.OTel.Compression, TimeoutMS: o.OTel.TimeoutMS, ServiceName: o.OTel.ServiceName,
			ResourceAttributes: maps.Clone(o.OTel.ResourceAttributes), Sampler: o.OTel.Sampler, SamplerArg: o.OTel.SamplerArg,
			Propagators: slices.Clone(o.OTel.Propagators), MaxQueueSize: o.OTel.MaxQueueSize, MaxExportBatchSize: o.OTel.MaxExportBatchSize,
			ScheduleDelayMS: o.OTel.ScheduleDelayMS, ExportTimeoutMS: o.OTel.ExportTimeoutMS,
		},
		Skills: deployment.Skills{Roots: maps.Clone(o.Skills.Roots), Activate: slices.Clone(o.Skills.Activate),
			Pins: maps.Clone(o.Skills.Pins), Files: maps.Clone(o.Skills.Files)},
		MCP: deployment.MCP{Servers: make(map[string]deployment.MCPServer, len(o.MCP.Servers))},
		A2A: deployment.A2A{Remotes: make(map[string]deployment.A2ARemote, len(o.A2A.Remotes))},
	}
	for name, s := range o.MCP.Servers {
		v.MCP.Servers[name] = deployment.MCPServer{
			Transport: s.Transport, Command: s.Command, Args: slices.Clone(s.Args), CWD: pathRef(s.CWD), Env: maps.Clone(s.Env),
			URL: s.URL, Headers: maps.Clone(s.Headers), Required: s.Required, StartupTimeoutMS: s.StartupTimeoutMS,
			OperationTimeoutMS: s.OperationTimeoutMS, Pins: maps.Clone(s.Pins),
		}
		if a := s.OAuth; a != nil {
			vs := v.MCP.Servers[name]
			vs.OAuth = &deployment.MCPOAuth{Grant: a.Grant, ClientID: a.ClientID, ClientSecret: a.ClientSecret, PrivateKey: a.PrivateKey,
				ClientMetadataURL: a.ClientMetadataURL, Scopes: slices.Clone(a.Scopes),
				IDToken: a.IDToken, IdentityProvider: a.IdentityProvider, IdentityClientID: a.IdentityClientID}
			v.MCP.Servers[name] = vs
		}
	}
	for name, p := range o.Skills.Packages {
		if v.Skills.Packages == nil {
			v.Skills.Packages = map[string]deployment.SkillPackage{}
		}
		vp := deployment.SkillPackage{Archive: pathRef(p.Archive), Version: p.Version, Digest: p.Digest}
		if g := p.Git; g != nil {
			vp.Git = &deployment.SkillGit{Repo: g.Repo, Ref: g.Ref, Subdir: g.Subdir}
		}
		v.Skills.Packages[name] = vp
	}
	for name, in := range o.Skills.Inline {
		if v.Skills.Inline == nil {
			v.Skills.Inline = map[string]deployment.InlineSkill{}
		}
		v.Skills.Inline[name] = deployment.InlineSkill{Description: in.Description, Instructions: in.Instructions, License: in.License,
			Compatibility: in.Compatibility, AllowedTools: slices.Clone(in.AllowedTools), Owner: in.Owner, Version: in.Version,
			TaskKinds: slices.Clone(in.TaskKinds), CompatibleAdapters: slices.Clone(in.CompatibleAdapters), Credentials: slices.Clone(in.Credentials)}
	}
	for name, r := range o.A2A.Remotes {
		vr := deployment.A2ARemote{CardURL: r.CardURL, Endpoint: r.Endpoint, TraceContext: r.TraceContext}
		if r.Bearer != nil {
			vr.Bearer = &deployment.Bearer{Scheme: r.Bearer.Scheme, Credential: r.Bearer.Credential}
		}
		v.A2A.Remotes[name] = vr
	}
	return v
}

// pathRef is a copy of p, nil for nil.
func pathRef(p *config.PathRef) *deployment.PathRef {
	if p == nil {
		return nil
	}
	c := *p
	return &c
}
