package ledger

import (
	"errors"
	"testing"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/ledger/outcome"
)

// TestOutstandingReservationsCountAgainstTheCeiling: "reserve before admit".
// Under a ceiling of 1, a second admission or reservation made before the
// first is dispatched is ErrLimit: what is admitted but not yet dispatched
// counts against tool_calls, model_calls, total_tokens and cost as what is
// charged does, so a turn of several calls, or children admitting at once,
// never overshoots the ceiling.
func TestOutstandingReservationsCountAgainstTheCeiling(t *testing.T) {
	t.Parallel()
	allow := authority.Decision{Allowed: true, Layer: "policy", RuleID: "r"}
	for _, tc := range []struct {
		kind   outcome.LimitKind
		limits Limits
		admit  func(r *Root, agent, id string) error
	}{
		{outcome.LimitToolCalls, Limits{ToolCalls: Max(1)}, func(r *Root, agent, id string) error {
			return r.AdmitToolCall(bg, agent, ToolCall{ID: id, Name: "fs.read", Decision: allow})
		}},
		{outcome.LimitModelCalls, Limits{ModelCalls: Max(1)}, func(r *Root, agent, id string) error {
			_, err := r.ReserveModelCall(bg, agent, ModelCall{ID: id})
			return err
		}},
		{outcome.LimitTotalTokens, Limits{TotalTokens: Max(1)}, func(r *Root, agent, id string) error {
			_, err := r.ReserveModelCall(bg, agent, ModelCall{ID: id, TokenBound: Max(1)})
			return err
		}},
		{outcome.LimitCost, Limits{CostMicroUSD: Max(1)}, func(r *Root, agent, id string) error {
			_, err := r.ReserveModelCall(bg, agent, ModelCall{ID: id, CostBound: Max(1)})
			return err
		}},
	} {
		t.Run(string(tc.kind), func(t *testing.T) {
			t.Parallel()
			// On the root itself, and through a child whose own ceiling
			// is its parent's: the parent's outstanding reservation binds
			// the child too.
			r, _, _ := newRoot(t, tc.limits)
			root := r.RootAgentID()
			if err := tc.admit(r, root, "first"); err != nil {
				t.Fatalf("the first unit under a ceiling of 1: %v", err)
			}
			err := tc.admit(r, root, "second")
			var le *LimitError
			if !errors.Is(err, ErrLimit) || !errors.As(err, &le) || le.Kind != tc.kind {
				t.Fatalf("a second unit admitted before the first was dispatched: got %v, want a %s LimitError", err, tc.kind)
			}
			child, err := r.StartAgent(bg, AgentSpec{ParentID: root})
			if err != nil {
				t.Fatal(err)
			}
			if err := tc.admit(r, child, "child"); !errors.Is(err, ErrLimit) {
				t.Fatalf("a child admitted a unit its parent holds in reservation: got %v, want ErrLimit", err)
			}
		})
	}
}
