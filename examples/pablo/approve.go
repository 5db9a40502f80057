package main

import (
	"context"
	"slices"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/approval"
	"github.com/pabloagent/pablo/authority"
)

// preApproved is the approver of `pablo run --approve CAPABILITY`: the host
// answers allow_once to every call of the named capabilities that needs
// approval, and rejects any other. It is the host's explicit, recorded
// choice (each answer is in the ledger like any other); it never adds a
// capability, only answers for calls the layers already allow.
type preApproved struct {
	ids []authority.ID
}

// Approve implements pablo.Approver.
func (a preApproved) Approve(_ context.Context, req approval.Request) (approval.Answer, error) {
	if slices.Contains(a.ids, req.Tool) {
		return approval.AllowOnce, nil
	}
	return approval.Reject, nil
}

// ApprovalChannel implements pablo.ApprovalChannel: the host answered.
func (preApproved) ApprovalChannel() string { return "host" }

// runApprover is the approver a `pablo run` task asks: --approve's; with
// no --approve, the terminal's prompt when stdin is a terminal; or none
// (no channel: a call that needs approval is denied). The caller closes
// what it returns once the task settled.
func runApprover(p *parsed, h *host) (pablo.Approver, func(), error) {
	vals := p.values["approve"]
	if len(vals) == 0 {
		if tty := openTTYApprover(h.stdin); tty != nil {
			return tty, func() { tty.Close() }, nil
		}
		return nil, func() {}, nil
	}
	ids := make([]authority.ID, 0, len(vals))
	for _, v := range vals {
		id := authority.ID(v)
		if err := id.Validate(); err != nil {
			return nil, nil, usagef("--approve %q: %v", v, err)
		}
		ids = append(ids, id)
	}
	return preApproved{ids: ids}, func() {}, nil
}
