package engine

import (
	"fmt"
	"slices"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/internal/config"
)

// askFirst is an authority that asks the task's approver before every call
// of the capabilities a host named (HostOptions.Ask): it marks their
// allowed decisions NeedsApproval. It only adds a question; what it
// allows, denies or narrows is the wrapped authority's.
type askFirst struct {
	authority.Authority
	ask []authority.ID
	// class is options.approvals: the tool classes whose every call asks.
	class config.ApprovalOptions
}

// The layer and rule a requirement of HostOptions.Ask is reported under.
const (
	hostAskLayer = "host"
	hostAskRule  = "host.ask"
)

// Decide implements authority.Authority. A requirement the wrapped
// authority's rules set comes first and is kept; the class key and the
// host's list only add theirs.
func (a askFirst) Decide(req authority.Request) authority.Decision {
	d := a.Authority.Decide(req)
	if key := a.class.RequiredBy(string(req.Capability)); key != "" {
		d.RequireApproval(config.ApprovalsLayer, key)
	}
	if slices.Contains(a.ask, req.Capability) {
		d.RequireApproval(hostAskLayer, hostAskRule)
	}
	return d
}

// Narrow implements authority.Authority: a narrowed authority still asks.
func (a askFirst) Narrow(n authority.Narrowing) (authority.Authority, error) {
	inner, err := a.Authority.Narrow(n)
	if err != nil {
		return nil, err
	}
	return askFirst{Authority: inner, ask: a.ask, class: a.class}, nil
}

// WithRoles implements authority.RoleBinder when the wrapped authority
// does: the bound authority still asks.
func (a askFirst) WithRoles(roles []string) (authority.Authority, error) {
	b, ok := a.Authority.(authority.RoleBinder)
	if !ok {
		return nil, fmt.Errorf("pablo: task roles: the authority (%T) is not an authority.RoleBinder, so it cannot decide what a role admits", a.Authority)
	}
	inner, err := b.WithRoles(roles)
	if err != nil {
		return nil, err
	}
	return askFirst{Authority: inner, ask: a.ask, class: a.class}, nil
}

// AskGate wraps set when the host (ask) or the deployment
// (options.approvals) asks for approvals. Each name must be a valid
// capability ID.
func AskGate(set *authority.Set, ask []authority.ID, class config.ApprovalOptions) (authority.Authority, error) {
	if len(ask) == 0 && class == (config.ApprovalOptions{}) {
		return set, nil
	}
	for _, id := range ask {
		if err := id.Validate(); err != nil {
			return nil, fmt.Errorf("pablo: HostOptions.Ask: %w", err)
		}
	}
	return askFirst{Authority: set, ask: slices.Clone(ask), class: class}, nil
}
