package ledger

import (
	"strconv"

	"github.com/pabloagent/pablo/ledger/outcome"
)

// Outcome is the terminal outcome of an agent; the root agent's outcome is the
// task's. Only the fields of its Status are set:
//   - policy_denied: Rule (a reference rule enum or a configured rule ID);
//   - limit_exceeded: Limit;
//   - failed: Code and Delivery, optionally Reason;
//   - cancelled: optionally Reason;
//   - completed: optionally Result, a reference to the stored output.
type Outcome struct {
	Status   outcome.Status      `json:"status"`
	Rule     string              `json:"rule,omitempty"`
	Limit    outcome.LimitKind   `json:"limit,omitempty"`
	Code     outcome.FailureCode `json:"code,omitempty"`
	Delivery outcome.Delivery    `json:"delivery,omitempty"`
	Result   ResultRef           `json:"result,omitempty"`
	// Reason says why a failed task failed where its code alone does not
	// (which server did not start, and how), or who cancelled a cancelled
	// one (the host's shutdown of the runtime): masked and bounded by the
	// engine to MaxReasonBytes.
	Reason string `json:"reason,omitempty"`
}

// MaxReasonBytes bounds Outcome.Reason.
const MaxReasonBytes = 2048

func (o Outcome) validate() error {
	bad := func(reason string) error {
		return &InvalidError{Field: "outcome", Reason: reason}
	}
	extra := o.Rule != "" && o.Status != outcome.PolicyDenied ||
		o.Limit != "" && o.Status != outcome.LimitExceeded ||
		(o.Code != "" || o.Delivery != "") && o.Status != outcome.Failed ||
		o.Reason != "" && o.Status != outcome.Failed && o.Status != outcome.Cancelled ||
		o.Result != "" && o.Status != outcome.Completed
	if extra {
		return bad("status " + strconv.Quote(string(o.Status)) + " carries a field that belongs to another status")
	}
	if len(o.Reason) > MaxReasonBytes {
		return bad("a Reason is at most 2048 bytes")
	}
	switch o.Status {
	case outcome.Completed, outcome.Cancelled, outcome.TimedOut:
	case outcome.PolicyDenied:
		if o.Rule == "" {
			return bad("policy_denied needs the deciding Rule")
		}
	case outcome.LimitExceeded:
		if o.Limit == "" {
			return bad("limit_exceeded needs the Limit kind")
		}
	case outcome.Failed:
		if o.Code == "" || !o.Delivery.Valid() {
			return bad("failed needs a Code and a Delivery of not_sent, may_have_been_sent or response_received")
		}
	default:
		return bad("unknown status " + strconv.Quote(string(o.Status)))
	}
	return nil
}
