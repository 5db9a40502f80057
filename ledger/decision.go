package ledger

import (
	"encoding/json"

	"github.com/pabloagent/pablo/ledger/outcome"

	"github.com/pabloagent/pablo/authority"
)

// The ledger records an [authority.Decision] as the layer, rule and reason
// that decided, without the decision's trail, and writes it as it always
// has: the empty fields left out. (authority.Decision's own JSON, which
// events and the CLI's policy commands print, writes every field.)

// recorded is d as the ledger keeps it: without its trail.
func recorded(d authority.Decision) authority.Decision {
	d.Trail = nil
	return d
}

// decided reports whether d is a decision rather than the zero value.
func decided(d authority.Decision) bool {
	return d.Allowed || d.Layer != "" || d.RuleID != "" || d.Reason != "" || len(d.Trail) > 0 || d.NeedsApproval || d.ApprovalBy != nil || d.Sandbox != "" || d.Egress != nil || d.MissingRole != ""
}

// decisionJSON is a decision as records and reports write it.
type decisionJSON struct {
	Allowed bool   `json:"allowed"`
	Layer   string `json:"layer,omitempty"`
	RuleID  string `json:"rule_id,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// NeedsApproval: the call ran only once its approver allowed it.
	NeedsApproval bool `json:"needs_approval,omitempty"`
	// ApprovalBy names what required the approval.
	ApprovalBy *authority.ApprovalSource `json:"approval_required_by,omitempty"`
	// Sandbox: the sandbox the call ran in ("off" when the host opted
	// out).
	Sandbox string `json:"sandbox,omitempty"`
	// Egress: the egress proxy's verdict on one connection.
	Egress *authority.EgressDecision `json:"egress,omitempty"`
	// MissingRole: the role the task lacked for a denied capability.
	MissingRole string `json:"missing_role,omitempty"`
}

func decisionOf(d authority.Decision) decisionJSON {
	return decisionJSON{Allowed: d.Allowed, Layer: d.Layer, RuleID: d.RuleID, Reason: d.Reason, NeedsApproval: d.NeedsApproval, ApprovalBy: d.ApprovalBy, Sandbox: d.Sandbox, Egress: d.Egress, MissingRole: d.MissingRole}
}

// MarshalJSON writes the record with its decision as the ledger writes one.
func (c CallRecord) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		CallID          string           `json:"call_id"`
		AgentID         string           `json:"agent_id"`
		Kind            CallKind         `json:"kind"`
		State           CallState        `json:"state"`
		Step            uint64           `json:"step,omitempty"`
		Name            string           `json:"name,omitempty"`
		ArgumentsDigest string           `json:"arguments_digest,omitempty"`
		InputBytes      uint64           `json:"input_bytes,omitempty"`
		IdempotencyKey  string           `json:"idempotency_key,omitempty"`
		Decision        decisionJSON     `json:"decision,omitzero"`
		TokenBound      Limit            `json:"token_bound,omitzero"`
		CostBound       Limit            `json:"cost_bound,omitzero"`
		Status          string           `json:"status,omitempty"`
		Delivery        outcome.Delivery `json:"delivery,omitempty"`
		Usage           Usage            `json:"usage,omitzero"`
		CostMicroUSD    Count            `json:"cost_microusd,omitzero"`
		ChargedTokens   Count            `json:"charged_tokens,omitzero"`
		ChargedCost     Count            `json:"charged_cost_microusd,omitzero"`
		OutputBytes     uint64           `json:"output_bytes,omitempty"`
		Result          ResultRef        `json:"result,omitempty"`
		Error           string           `json:"error,omitempty"`
		Counted         bool             `json:"counted,omitempty"`
	}{c.CallID, c.AgentID, c.Kind, c.State, c.Step, c.Name, c.ArgumentsDigest, c.InputBytes, c.IdempotencyKey, decisionOf(c.Decision),
		c.TokenBound, c.CostBound, c.Status, c.Delivery, c.Usage, c.CostMicroUSD, c.ChargedTokens, c.ChargedCost,
		c.OutputBytes, c.Result, c.Error, c.Counted})
}

// MarshalJSON writes the record with its decision as the ledger writes one.
func (r DecisionRecord) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		AgentID    string       `json:"agent_id"`
		Capability string       `json:"capability"`
		Decision   decisionJSON `json:"decision"`
	}{r.AgentID, r.Capability, decisionOf(r.Decision)})
}

// MarshalJSON writes the report with its decision as the ledger writes one.
func (c CallReport) MarshalJSON() ([]byte, error) {
	var d *decisionJSON
	if c.Decision != nil {
		j := decisionOf(*c.Decision)
		d = &j
	}
	return json.Marshal(struct {
		AgentID         string           `json:"agent_id"`
		CallID          string           `json:"call_id"`
		Kind            CallKind         `json:"kind"`
		Step            uint64           `json:"step"`
		Name            string           `json:"name,omitempty"`
		ArgumentsDigest string           `json:"arguments_digest,omitempty"`
		IdempotencyKey  string           `json:"idempotency_key,omitempty"`
		Decision        *decisionJSON    `json:"decision,omitempty"`
		State           CallState        `json:"state"`
		Class           outcome.Class    `json:"class"`
		Status          string           `json:"status,omitempty"`
		Delivery        outcome.Delivery `json:"delivery,omitempty"`
		Result          ResultRef        `json:"result,omitempty"`
		Error           string           `json:"error,omitempty"`
	}{c.AgentID, c.CallID, c.Kind, c.Step, c.Name, c.ArgumentsDigest, c.IdempotencyKey, d, c.State, c.Class, c.Status, c.Delivery, c.Result, c.Error})
}
