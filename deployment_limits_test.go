package pablo

import (
	"testing"

	"github.com/pabloagent/pablo/ledger"
)

// TestLimitKeysReachTheirCeilings: each options.limits key the ledger
// enforces becomes that ceiling of the runtime (and of no other), so the
// ledger's own boundary tests (TestCeilingsAtTheLimitAndOnePast) are the
// key's effect.
func TestLimitKeysReachTheirCeilings(t *testing.T) {
	for key, c := range map[string]struct {
		value string
		want  uint64
		get   func(ledger.Limits) ledger.Limit
	}{
		"max_model_calls":       {"7", 7, func(l ledger.Limits) ledger.Limit { return l.ModelCalls }},
		"max_tool_calls":        {"7", 7, func(l ledger.Limits) ledger.Limit { return l.ToolCalls }},
		"max_total_tokens":      {`"7"`, 7, func(l ledger.Limits) ledger.Limit { return l.TotalTokens }},
		"max_cost_microusd":     {`"7"`, 7, func(l ledger.Limits) ledger.Limit { return l.CostMicroUSD }},
		"max_events":            {`"7"`, 7, func(l ledger.Limits) ledger.Limit { return l.Events }},
		"max_run_duration_ms":   {"7", 7, func(l ledger.Limits) ledger.Limit { return l.DurationMillis }},
		"max_context_bytes":     {"7", 7, func(l ledger.Limits) ledger.Limit { return l.ContextBytes }},
		"max_input_bytes":       {"7", 7, func(l ledger.Limits) ledger.Limit { return l.InputBytes }},
		"max_output_bytes":      {"7", 7, func(l ledger.Limits) ledger.Limit { return l.OutputBytes }},
		"max_tool_input_bytes":  {"7", 7, func(l ledger.Limits) ledger.Limit { return l.ToolInputBytes }},
		"max_tool_output_bytes": {"2048", 2048, func(l ledger.Limits) ledger.Limit { return l.ToolOutputBytes }},
	} {
		t.Run(key, func(t *testing.T) {
			d := providerDeployment(t, "[options.limits]\n"+key+" = "+c.value+"\n", nil)
			got := d.ledgerLimits()
			if n, finite := c.get(got).Value(); !finite || n != c.want {
				t.Fatalf("%s = %s gave the ceiling %v", key, c.value, c.get(got))
			}
			// No other ceiling moved off its default.
			def := providerDeployment(t, "", nil).ledgerLimits()
			for other, o := range map[string]func(ledger.Limits) ledger.Limit{
				"max_model_calls": func(l ledger.Limits) ledger.Limit { return l.ModelCalls },
				"max_input_bytes": func(l ledger.Limits) ledger.Limit { return l.InputBytes },
				"max_events":      func(l ledger.Limits) ledger.Limit { return l.Events },
			} {
				if other != key && o(got) != o(def) {
					t.Fatalf("%s moved %s", key, other)
				}
			}
		})
	}
}
