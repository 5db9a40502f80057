package shell

import (
	"errors"
	"fmt"

	"github.com/pabloagent/pablo/internal/sandbox"
)

// LayerDecision is one layer's verdict on a command.
type LayerDecision struct {
	Allowed bool   `json:"allowed"`
	Layer   string `json:"layer"`
	RuleID  string `json:"rule_id"`
	Reason  string `json:"reason"`
	// ApprovalRule, on an allowed verdict, is the matching allow rule
	// that requires approval, or empty.
	ApprovalRule string `json:"approval_rule,omitempty"`
}

// Decision is the verdict on a command, as shell.run and a dry run
// (`policy check --shell`) report it. It never holds the command text.
type Decision struct {
	// Allowed is true only when every layer allowed.
	Allowed bool `json:"allowed"`
	// Layer and RuleID name what decided: for a denial the first layer (or
	// "builtin") and rule that denied; for an allowance the last layer
	// consulted and its allowing rule.
	Layer  string `json:"layer"`
	RuleID string `json:"rule_id"`
	// Reason is a code: a SyntaxReason, a ResolveReason, "deny_rule",
	// "allow_rule", "allowlist_miss", "default_deny", "default_allow",
	// "workspace", "symlink", "environment", "cwd_roots" or
	// "unsupported_platform".
	Reason string `json:"reason"`
	// Argv is the parsed command, when it parsed.
	Argv []string `json:"argv,omitempty"`
	// Executable is the resolved program, when it resolved.
	Executable *Executable `json:"executable,omitempty"`
	// Layers holds each consulted layer's verdict, in order.
	Layers []LayerDecision `json:"layers,omitempty"`
	// Sandbox is the sandbox an allowed command runs in.
	Sandbox *sandbox.Profile `json:"sandbox,omitempty"`
	// ApprovalLayer and ApprovalRule, on an allowed decision, name the
	// first layer's allow rule that requires approval (approval =
	// "required"); empty when none does.
	ApprovalLayer string `json:"approval_layer,omitempty"`
	ApprovalRule  string `json:"approval_rule,omitempty"`
}

// ErrDenied is the kind of every *DeniedError.
var ErrDenied = errors.New("shell: command denied by policy")

// DeniedError reports a denial with the deciding layer and rule. Its
// message never contains the command text.
type DeniedError struct {
	Decision Decision
	// Cause is what made the denial, when it is an error of its own: the
	// *sandbox.UnavailableError of builtin.sandbox.unavailable.
	Cause error
}

// Error implements error.
func (e *DeniedError) Error() string {
	return fmt.Sprintf("shell: command denied by layer %q rule %q (%s)", e.Decision.Layer, e.Decision.RuleID, e.Decision.Reason)
}

// Unwrap makes errors.Is(err, ErrDenied) hold, and errors.Is and
// errors.As reach the cause.
func (e *DeniedError) Unwrap() []error {
	if e.Cause == nil {
		return []error{ErrDenied}
	}
	return []error{ErrDenied, e.Cause}
}

// sandboxDenial denies every request of a runner whose required sandbox
// cannot be made here: it fails closed, never unconfined.
func sandboxDenial(cause error) *DeniedError {
	return &DeniedError{Decision: Decision{Layer: builtinLayer, RuleID: ruleSandboxUnavailable, Reason: reasonSandboxUnavailable}, Cause: cause}
}

// Policy is the literal command policy: the ordered layers that configured
// `shell.commands`. A nil *Policy means no layer configured it, and
// shell.run passes the command to /bin/sh unparsed, as the reference does.
type Policy struct {
	layers []Layer
}

// NewPolicy validates the layers and returns the policy they form. At least
// one layer is needed; when no layer configures `shell.commands`, use a nil
// *Policy instead.
func NewPolicy(layers ...Layer) (*Policy, error) {
	if len(layers) == 0 {
		return nil, &RuleError{Problem: "a command policy needs at least one layer; without shell.commands anywhere, use a nil *Policy"}
	}
	seen := map[string]bool{}
	for _, l := range layers {
		if l.Name == "" || l.Name == builtinLayer {
			return nil, &RuleError{Layer: l.Name, Problem: fmt.Sprintf("layer name must be nonempty and not %q", builtinLayer)}
		}
		if seen[l.Name] {
			return nil, &RuleError{Layer: l.Name, Problem: "layer names must be unique"}
		}
		seen[l.Name] = true
		if err := l.Rules.Validate(l.Name); err != nil {
			return nil, err
		}
	}
	return &Policy{layers: append([]Layer(nil), layers...)}, nil
}

// Check decides a command without running anything: parse, resolve, then
// every layer in order. The first denying layer decides.
func (p *Policy) Check(command string) Decision {
	argv, err := Parse(command)
	if err != nil {
		var se *SyntaxError
		errors.As(err, &se)
		return Decision{Layer: builtinLayer, RuleID: ruleSyntax, Reason: string(se.Reason)}
	}
	exe, err := Resolve(argv[0])
	if err != nil {
		var re *ResolveError
		errors.As(err, &re)
		return Decision{Layer: builtinLayer, RuleID: ruleExecutable, Reason: string(re.Reason), Argv: argv}
	}
	d := Decision{Argv: argv, Executable: &exe}
	for _, l := range p.layers {
		ld := l.decide(argv, exe)
		d.Layers = append(d.Layers, ld)
		d.Allowed, d.Layer, d.RuleID, d.Reason = ld.Allowed, ld.Layer, ld.RuleID, ld.Reason
		if !ld.Allowed {
			d.ApprovalLayer, d.ApprovalRule = "", ""
			break
		}
		if ld.ApprovalRule != "" && d.ApprovalRule == "" {
			d.ApprovalLayer, d.ApprovalRule = ld.Layer, ld.ApprovalRule
		}
	}
	return d
}
