package engine

import (
	"context"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/internal/sandbox"
)

// CallDecider is a catalog whose tools check what a call names (paths, a
// command) themselves: it answers, without running anything, what the
// tool would decide. ok is false when it has nothing to add to the
// contract's decision (arguments the tool will reject, say).
type CallDecider interface {
	DecideCall(ctx context.Context, call authority.Call) (d authority.Decision, ok bool)
}

// DecideCall is the decision on one proposed call before it is admitted:
// the contract (the tool is admitted, its arguments fit its schema, the
// authority allows the capability and the resources the contract reads),
// then the owning catalog's own checks (workspace confinement, symlinks,
// read and write roots, the literal command policy). A denial is returned
// as a decision; a contract error (unknown tool, bad arguments, a resource
// outside the scope) as the *authority.ContractError. The run loop and
// Deployment.Decide, which `pablo policy check` prints, both ask it.
func DecideCall(ctx context.Context, contracts *authority.Contracts, owner Catalog, call authority.Call) (authority.Decision, error) {
	d, err := contracts.Decide(call)
	if err != nil {
		return d, err
	}
	if dc, ok := owner.(CallDecider); ok {
		if own, ok := dc.DecideCall(ctx, call); ok && (!own.Allowed || own.Layer != "") {
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
			// Network unrestricted-with-approval asks about every call,
			// whichever catalog runs it (shell.run, a stdio MCP server's
			// tool): the sandbox says so, and nothing lifts it.
			if p = p.Normalized(); p.Mode != sandbox.Off && p.Network == sandbox.UnrestrictedWithApproval {
				d.RequireApproval(authority.LayerDefaults, authority.RuleApprovalUnrestrictedNetwork)
			}
		}
	}
	if ac, ok := owner.(ArgumentGatedCatalog); ok && d.Allowed {
		if layer, rule := ac.ApprovalFor(call); rule != "" {
			d.RequireApproval(layer, rule)
		}
	}
	if pc, ok := owner.(PrivilegedCatalog); ok && d.Allowed {
		if rule := pc.Privileged(call.Tool); rule != "" {
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

// ArgumentGatedCatalog is a catalog some of whose calls need approval by
// what their arguments ask for (a memory diff that reads beyond the pin):
// it only adds a question, never lifts one.
type ArgumentGatedCatalog interface {
	ApprovalFor(call authority.Call) (layer, rule string)
}

// PrivilegedCatalog is a catalog some of whose calls are privileged by
// default: they need approval unless something else bounds them
// (docs/approvals.md, the defaults matrix).
type PrivilegedCatalog interface {
	// Privileged is the rule that makes a call of id need approval by
	// default, or empty.
	Privileged(id authority.ID) string
}

func (c *WorkspaceCatalog) DecideCall(ctx context.Context, call authority.Call) (authority.Decision, bool) {
	d, err := c.tools.Decide(ctx, call.Tool, call.Arguments)
	return d, err == nil
}
