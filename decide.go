package pablo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/children"
	"github.com/pabloagent/pablo/internal/redact"
	"github.com/pabloagent/pablo/internal/sandbox"
	"github.com/pabloagent/pablo/internal/shell"
	"github.com/pabloagent/pablo/mcp"
)

// callDecider is a catalog whose tools check what a call names (paths, a
// command) themselves: it answers, without running anything, what the
// tool would decide. ok is false when it has nothing to add to the
// contract's decision (arguments the tool will reject, say).
type callDecider interface {
	decideCall(ctx context.Context, call authority.Call) (d authority.Decision, ok bool)
}

// decideCall is the decision on one proposed call before it is admitted:
// the contract (the tool is admitted, its arguments fit its schema, the
// authority allows the capability and the resources the contract reads),
// then the owning catalog's own checks (workspace confinement, symlinks,
// read and write roots, the literal command policy). A denial is returned
// as a decision; a contract error (unknown tool, bad arguments, a resource
// outside the scope) as the *authority.ContractError. The run loop and
// Deployment.Decide, which `pablo policy check` prints, both ask it.
func decideCall(ctx context.Context, contracts *authority.Contracts, owner ToolCatalog, call authority.Call) (authority.Decision, error) {
	d, err := contracts.Decide(call)
	if err != nil {
		return d, err
	}
	if dc, ok := owner.(callDecider); ok {
		if own, ok := dc.decideCall(ctx, call); ok && (!own.Allowed || own.Layer != "") {
			// A tool's own check can deny more, never lift an approval
			// the authority asked for; a requirement of its own (a
			// command rule's) comes after the authority's.
			if d.NeedsApproval {
				src := authority.ApprovalSourceOf(d)
				mine := own.ApprovalBy
				own.ApprovalBy = nil
				own.RequireApproval(src.Layer, src.RuleID)
				if mine != nil {
					own.RequireApproval(mine.Layer, mine.RuleID)
				}
			}
			d = own
		}
	}
	if dc, ok := owner.(delegatingCatalog); ok && d.NeedsApproval && !dc.delegates(call) {
		liftForOwnChildren(&d)
	}
	if sc, ok := owner.(SandboxReporter); ok && d.Allowed {
		if p, ok := sc.Sandbox(call.Tool); ok {
			d.Sandbox = p.String()
		}
	}
	if pc, ok := owner.(privilegedCatalog); ok && d.Allowed {
		if rule := pc.privileged(call.Tool); rule != "" {
			// The privileged defaults (docs/approvals.md) only add a
			// question; nothing here can lift one a layer asked for.
			d.RequireApproval(authority.LayerDefaults, rule)
		}
	}
	return d, nil
}

// delegatingCatalog is a catalog (the subagent tool's) only some of whose
// calls hand work to another agent: an approval of its capability is an
// approval of that delegation, so a call that delegates nothing (inspect,
// wait, stop: the caller's own children) never asks.
type delegatingCatalog interface {
	delegates(call authority.Call) bool
}

// liftForOwnChildren clears the approval a subagent call that delegates
// nothing was marked with: every requirement on the subagent capability
// (a tools rule, options.approvals.subagent, HostOptions.Ask) is a
// requirement on delegation, which such a call does not do.
func liftForOwnChildren(d *authority.Decision) {
	d.NeedsApproval, d.ApprovalBy = false, nil
}

// privilegedCatalog is a catalog some of whose calls are privileged by
// default: they need approval unless something else bounds them
// (docs/approvals.md, the defaults matrix).
type privilegedCatalog interface {
	// privileged is the rule that makes a call of id need approval by
	// default, or empty.
	privileged(id authority.ID) string
}

// privileged says whether a shell.run needs approval by default: one
// that runs with the sandbox off and no literal command policy (anything
// may run, touching anything), or one whose sandbox allows the network. A
// sandboxed call without the network is bounded by its sandbox, and an
// unsandboxed one under a literal command policy by the policy: neither
// asks.
func (c *shellCatalog) privileged(id authority.ID) string {
	if id != authority.ShellRun {
		return ""
	}
	p := c.runner.Sandbox().Normalized()
	switch {
	case p.Mode == sandbox.Off && !c.literal:
		return authority.RuleApprovalUnconfinedShell
	case p.Mode != sandbox.Off && p.Network == sandbox.Allow:
		return authority.RuleApprovalShellNetwork
	}
	return ""
}

// SandboxReporter is an optional capability of a ToolCatalog, named as
// http.Flusher is: a catalog whose tools run in processes it starts in a
// sandbox (shell.run, an [*mcp.Catalog]'s stdio servers) says which
// sandbox each tool runs in, "off" included. The runtime records it in the
// call's decision, its tool.started event and the dispatch snapshot. A
// host that wraps such a catalog forwards Sandbox (embedding the
// SandboxReporter it wraps does).
type SandboxReporter interface {
	Sandbox(id authority.ID) (mcp.Sandbox, bool)
}

// Sandbox is the sandbox shell.run runs in.
func (c *shellCatalog) Sandbox(id authority.ID) (sandbox.Profile, bool) {
	return c.runner.Sandbox(), id == authority.ShellRun
}

func (c *workspaceCatalog) decideCall(ctx context.Context, call authority.Call) (authority.Decision, bool) {
	d, err := c.tools.Decide(ctx, call.Tool, call.Arguments)
	return d, err == nil
}

func (c *shellCatalog) decideCall(ctx context.Context, call authority.Call) (authority.Decision, bool) {
	var req shell.Request
	dec := json.NewDecoder(bytes.NewReader(call.Arguments))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return authority.Decision{}, false
	}
	sd, err := c.runner.DecideContext(ctx, req)
	if err != nil {
		return authority.Decision{}, false
	}
	d := authority.Decision{Allowed: sd.Allowed, Layer: sd.Layer, RuleID: sd.RuleID, Reason: sd.Reason}
	if sd.ApprovalRule != "" {
		d.RequireApproval(sd.ApprovalLayer, sd.ApprovalRule)
	}
	return d, true
}

// Decide is the decision a task of this deployment makes on one call of
// tool id with JSON arguments args, before the call is admitted: the
// decision `pablo policy check` prints. The workspace tools are decided
// over the bound workspace (confinement, symlinks, read and write roots)
// and shell.run over the literal command policy, by the same function a
// running task uses; other capabilities (MCP tools, Skills, host tools),
// whose catalogs open with a task, are decided by the authority over the
// capability. Nil args decide the capability alone, as the catalog the
// model sees is decided. Arguments the tool's contract rejects fail with
// the *authority.ContractError (errors.Is authority.ErrInvalidArguments).
func (d *Deployment) Decide(ctx context.Context, id authority.ID, args json.RawMessage) (authority.Decision, error) {
	base, err := d.Authority()
	if err != nil {
		return authority.Decision{}, err
	}
	// The deployment's own approval classes ask here too, as in a task.
	set, err := askGate(base, nil, d.c.Options.Approvals)
	if err != nil {
		return authority.Decision{}, err
	}
	cats, cleanup, err := d.nativeCatalogs(base, &redact.Set{})
	defer func() {
		for _, c := range cleanup {
			c()
		}
	}()
	if err != nil {
		return authority.Decision{}, err
	}
	var owner ToolCatalog
	var specs []authority.ToolSpec
	for _, c := range cats {
		for _, spec := range c.Tools() {
			if spec.ID == id {
				owner = c
			}
			if set.Decide(authority.Request{Capability: spec.ID}).Allowed {
				specs = append(specs, spec)
			}
		}
	}
	if id == authority.Subagent && owner == nil && d.c.Options.Children.Enabled && set.Decide(authority.Request{Capability: id}).Allowed {
		// The subagent tool's catalog opens with a task: its calls are
		// decided over the same tool spec (the remote a spawn_remote
		// names) and judged by their action, as a task decides them. A
		// denied subagent is decided as the capability alone.
		sc := &subagentCatalog{Tool: children.NewTool(nil, sortedKeys(d.c.Options.A2A.Remotes))}
		owner = sc
		specs = append(specs, sc.Tools()...)
	}
	if owner == nil || args == nil {
		dec := set.Decide(authority.Request{Capability: id})
		if pc, ok := owner.(privilegedCatalog); ok && dec.Allowed {
			// A privileged default asks before every call of the
			// capability, whatever its arguments.
			if rule := pc.privileged(id); rule != "" {
				dec.RequireApproval(authority.LayerDefaults, rule)
			}
		}
		return dec, nil
	}
	contracts, err := authority.NewContracts(set, specs)
	if err != nil {
		return authority.Decision{}, err
	}
	dec, err := decideCall(ctx, contracts, owner, authority.Call{Tool: id, Arguments: args})
	var ce *authority.ContractError
	if errors.As(err, &ce) && ce.Decision != nil {
		return *ce.Decision, nil
	}
	return dec, err
}
