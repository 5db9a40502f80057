package config

import (
	"encoding/json"
	"slices"
	"strings"
)

// ReasoningCapabilities is an operator's declaration of what a model
// accepts for reasoning: options.model.reasoning_capabilities, or a named
// model's capabilities.reasoning. A declaration is not an attestation: it
// can only refuse a reasoning request, never enable one.
type ReasoningCapabilities struct {
	// Efforts are the efforts the model accepts; nil declares none (every
	// effort is accepted).
	Efforts []string `json:"efforts"`
	// Mandatory says the model always reasons: reasoning = "none" cannot
	// turn it off.
	Mandatory *bool `json:"mandatory"`
	// TokenBudget says whether the model accepts {budget_tokens = N};
	// false refuses a budget.
	TokenBudget *bool `json:"token_budget"`
}

// DeclaredReasoning returns the profile's declared reasoning
// capabilities and the option's pointer (below ptr, the profile's), or
// nil when it declares none.
func (m ModelOptions) DeclaredReasoning(ptr string) (*ReasoningCapabilities, string) {
	raw, at := m.declaredReasoningRaw(ptr)
	if len(raw) == 0 {
		return nil, at
	}
	var rc ReasoningCapabilities
	if json.Unmarshal(raw, &rc) != nil {
		return nil, at // the spec checked its shape
	}
	return &rc, at
}

// declaredReasoningRaw is the declaration's JSON and pointer:
// reasoning_capabilities on options.model, capabilities.reasoning on a
// named model.
func (m ModelOptions) declaredReasoningRaw(ptr string) (json.RawMessage, string) {
	if len(m.ReasoningCapabilities) > 0 || len(m.Capabilities) == 0 {
		return m.ReasoningCapabilities, ptr + "/reasoning_capabilities"
	}
	var caps struct {
		Reasoning json.RawMessage `json:"reasoning"`
	}
	_ = json.Unmarshal(m.Capabilities, &caps) // the spec checked its shape
	return caps.Reasoning, ptr + "/capabilities/reasoning"
}

// checkReasoning holds a profile's reasoning request to its declared
// reasoning capabilities and to its output bound: an effort the
// declaration does not list, "none" for a model that must reason, or a
// budget the model does not take is refused, and a budget must be below
// the output allowance (the profile's max_output_tokens, else
// limits.max_output_tokens).
func checkReasoning(ptr string, m ModelOptions, rootOutputTokens int64) error {
	g, err := m.Generation(ptr)
	if err != nil {
		return err
	}
	at := ptr + "/reasoning"
	if len(m.ModelOptions) > 0 {
		at = ptr + "/model_options/reasoning"
	}
	allowance := rootOutputTokens
	if g.MaxOutputTokens > 0 {
		allowance = g.MaxOutputTokens
	}
	if g.Budget > 0 && allowance > 0 && g.Budget >= uint64(allowance) {
		return invalid(at, "budget_tokens %d must be below the output allowance of %d tokens (max_output_tokens)", g.Budget, allowance)
	}
	rc, decl := m.DeclaredReasoning(ptr)
	if rc == nil {
		return nil
	}
	switch {
	case g.Effort != "" && rc.Efforts != nil && !slices.Contains(rc.Efforts, g.Effort):
		return invalid(at, "reasoning %q is not among the efforts %s declares (%s); choose one of them or provider_default", g.Effort, decl, strings.Join(rc.Efforts, ", "))
	case g.Effort == "none" && rc.Mandatory != nil && *rc.Mandatory:
		return invalid(at, "reasoning \"none\" cannot turn off a model whose %s says mandatory = true", decl)
	case g.Budget > 0 && rc.TokenBudget != nil && !*rc.TokenBudget:
		return invalid(at, "budget_tokens is refused: %s says token_budget = false; use an effort instead", decl)
	}
	return nil
}
