package pablo

import (
	"fmt"
	"slices"

	"github.com/pabloagent/pablo/authority"
)

// askFirst is an authority that asks the task's approver before every call
// of the capabilities a host named (HostOptions.Ask): it marks their
// allowed decisions NeedsApproval. It only adds a question; what it
// allows, denies or narrows is the wrapped authority's.
type askFirst struct {
	authority.Authority
	ask []authority.ID
}

// Decide implements authority.Authority.
func (a askFirst) Decide(req authority.Request) authority.Decision {
	d := a.Authority.Decide(req)
	if d.Allowed && slices.Contains(a.ask, req.Capability) {
		d.NeedsApproval = true
	}
	return d
}

// Narrow implements authority.Authority: a narrowed authority still asks.
func (a askFirst) Narrow(n authority.Narrowing) (authority.Authority, error) {
	inner, err := a.Authority.Narrow(n)
	if err != nil {
		return nil, err
	}
	return askFirst{Authority: inner, ask: a.ask}, nil
}

// askGate wraps set when the host asks for approvals. Each name must be a
// valid capability ID.
func askGate(set *authority.Set, ask []authority.ID) (authority.Authority, error) {
	if len(ask) == 0 {
		return set, nil
	}
	for _, id := range ask {
		if err := id.Validate(); err != nil {
			return nil, fmt.Errorf("pablo: HostOptions.Ask: %w", err)
		}
	}
	return askFirst{Authority: set, ask: slices.Clone(ask)}, nil
}
