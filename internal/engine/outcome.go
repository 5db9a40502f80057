package engine

import (
	"strings"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/ledger"
)

// usageOf is the outcome's usage of the ledger's usage u: a count the
// ledger does not know is null.
func usageOf(u ledger.Usage) *event.OutcomeUsage {
	f := func(c ledger.Count) *uint64 {
		if c.Unknown {
			return nil
		}
		n := c.N
		return &n
	}
	return &event.OutcomeUsage{InputTokens: f(u.InputTokens), OutputTokens: f(u.OutputTokens), CacheReadTokens: f(u.CacheReadTokens), CacheWriteTokens: f(u.CacheWriteTokens)}
}

// ruleOf maps a decision's rule ID to the outcome's rule field.
func ruleOf(ruleID string) any {
	switch ruleID {
	case authority.RuleToolUnavailable, authority.RuleWorkspace, authority.RuleSymlink, authority.RuleEnvironment, authority.RuleUnsupportedPlatform:
		return strings.TrimPrefix(ruleID, "builtin.")
	}
	return map[string]any{"configured": map[string]string{"id": ruleID}}
}

// ledgerOutcome converts an outcome for the ledger's terminal record.
func ledgerOutcome(o *event.Outcome) ledger.Outcome {
	lo := ledger.Outcome{Status: o.Status, Limit: o.Limit, Code: o.Code, Delivery: o.Delivery, Reason: o.Reason}
	switch r := o.Rule.(type) {
	case string:
		lo.Rule = r
	case map[string]any:
		lo.Rule = r["configured"].(map[string]string)["id"]
	}
	return lo
}
