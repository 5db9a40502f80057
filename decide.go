package pablo

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/children"
	"github.com/pabloagent/pablo/internal/engine"
	"github.com/pabloagent/pablo/internal/redact"
)

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
	return d.decideAs(ctx, id, args, nil)
}

// decideAs is Decide for a task holding roles (TaskRequest.Roles); nil
// roles decide as a task the host gave none.
func (d *Deployment) decideAs(ctx context.Context, id authority.ID, args json.RawMessage, roles []string) (authority.Decision, error) {
	base, err := d.Authority()
	if err != nil {
		return authority.Decision{}, err
	}
	if roles != nil {
		if base, err = base.WithRolesSet(roles); err != nil {
			return authority.Decision{}, err
		}
	}
	// The deployment's own approval classes ask here too, as in a task.
	set, err := engine.AskGate(base, nil, d.c.Options.Approvals)
	if err != nil {
		return authority.Decision{}, err
	}
	cats, cleanup, err := d.nativeCatalogs(base, &redact.Set{}, "", false)
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
		sc := engine.NewSubagentCatalog(children.NewTool(nil, slices.Sorted(maps.Keys(d.c.Options.A2A.Remotes))))
		owner = sc
		specs = append(specs, sc.Tools()...)
	}
	if owner == nil || args == nil {
		dec := set.Decide(authority.Request{Capability: id})
		if pc, ok := owner.(engine.PrivilegedCatalog); ok && dec.Allowed {
			// A privileged default asks before every call of the
			// capability, whatever its arguments.
			if rule := pc.Privileged(id); rule != "" {
				dec.RequireApproval(authority.LayerDefaults, rule)
			}
		}
		return dec, nil
	}
	contracts, err := authority.NewContracts(set, specs)
	if err != nil {
		return authority.Decision{}, err
	}
	dec, err := engine.DecideCall(ctx, contracts, owner, authority.Call{Tool: id, Arguments: args})
	var ce *authority.ContractError
	if errors.As(err, &ce) && ce.Decision != nil {
		return *ce.Decision, nil
	}
	return dec, err
}
