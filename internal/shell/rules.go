package shell

import (
	"errors"
	"fmt"
	"strings"

	"github.com/pabloagent/pablo/internal/ids"
)

// Limits on configured rules (reference §1.10, `shell.commands`).
const (
	MaxRulesPerList    = 128
	MaxRuleArgs        = 256
	MaxRuleArgBytes    = 8192
	MaxRuleArgsBytes   = 65536
	MaxExecutableBytes = 4096
	MaxExamplesPerRule = 64
	maxRuleIDBytes     = 64
	builtinLayer       = "builtin"
	ruleSyntax         = "builtin.shell.syntax"
	ruleExecutable     = "builtin.shell.executable"
	ruleAllowlistMiss  = "builtin.commands.allowlist_miss"
	ruleDefaultDeny    = "builtin.commands.default_deny"
	ruleDefaultAllow   = "builtin.commands.default_allow"
	ruleWorkspace      = "builtin.workspace"
	ruleSymlink        = "builtin.symlink"
	ruleEnvironment    = "builtin.environment"
	ruleUnsupportedOS  = "builtin.unsupported_platform"
	// ruleSandboxUnavailable: a required sandbox cannot be made here.
	ruleSandboxUnavailable   = "builtin.sandbox.unavailable"
	reasonSandboxUnavailable = "sandbox_unavailable"
	reasonDenyRule           = "deny_rule"
	reasonAllowRule          = "allow_rule"
	reasonAllowlistMiss      = "allowlist_miss"
	reasonDefaultDeny        = "default_deny"
	reasonDefaultAllow       = "default_allow"
	reasonWorkspace          = "workspace"
	reasonSymlink            = "symlink"
	reasonEnvironment        = "environment"
	reasonUnsupportedOS      = "unsupported_platform"
	reasonCwdRootsDenied     = "cwd_roots"
)

// Rule match modes.
const (
	// MatchExact: the arguments after the program equal the rule's Args.
	MatchExact = "exact"
	// MatchPrefix: the rule's Args are a prefix of the arguments after the
	// program, compared as whole arguments, never as substrings.
	MatchPrefix = "prefix"
)

// Rule defaults.
const (
	DefaultAllow = "allow"
	DefaultDeny  = "deny"
)

// ErrInvalidRule is the kind of every *RuleError.
var ErrInvalidRule = errors.New("shell: invalid command rule")

// CommandRule names one executable and an argument pattern.
type CommandRule struct {
	// ID names the rule in decisions; 1..64 of [A-Za-z0-9_.-].
	ID string `json:"id"`
	// Executable is an absolute path. It is matched by the device and
	// inode of the file it resolves to, so symlinks and hard links to the
	// same file match.
	Executable string `json:"executable"`
	// Args are whole arguments after the program (≤256, each ≤8192 bytes,
	// ≤65,536 together; empty strings count).
	Args []string `json:"args"`
	// Match is MatchExact or MatchPrefix.
	Match string `json:"match"`
	// MatchExamples are commands this rule must match, and
	// NotMatchExamples commands it must not; CheckExamples verifies them
	// when a deployment loads. (The TOML key `match` is taken by the mode,
	// so the config layer names these differently.)
	MatchExamples    []string `json:"match_examples,omitempty"`
	NotMatchExamples []string `json:"not_match_examples,omitempty"`
	// Approval, on an allow rule, makes a command it allows run only once
	// the task's approver allows that one call. A deny rule takes none.
	Approval bool `json:"approval,omitempty"`
}

// CommandRules is one layer's `shell.commands` object.
type CommandRules struct {
	// Default is DefaultAllow or DefaultDeny.
	Default string `json:"default"`
	// Allow and Deny hold at most 128 rules each.
	Allow []CommandRule `json:"allow,omitempty"`
	Deny  []CommandRule `json:"deny,omitempty"`
}

// Layer is one named source of command rules: the ordinary options or an
// authority layer. Every layer must allow a command.
type Layer struct {
	Name  string
	Rules CommandRules
}

// RuleError reports a command rule that cannot be used.
type RuleError struct {
	Layer  string
	List   string // "allow" or "deny"; empty for the layer itself
	Index  int
	RuleID string
	// Problem says what to change.
	Problem string
}

// Error implements error.
func (e *RuleError) Error() string {
	if e.List == "" {
		return fmt.Sprintf("shell: layer %q commands: %s", e.Layer, e.Problem)
	}
	return fmt.Sprintf("shell: layer %q commands.%s[%d] (id %q): %s", e.Layer, e.List, e.Index, e.RuleID, e.Problem)
}

// Unwrap makes errors.Is(err, ErrInvalidRule) hold.
func (e *RuleError) Unwrap() error { return ErrInvalidRule }

// Validate checks one layer's rules against the reference's limits.
func (r CommandRules) Validate(layer string) error {
	if r.Default != DefaultAllow && r.Default != DefaultDeny {
		return &RuleError{Layer: layer, Problem: fmt.Sprintf("default must be %q or %q, got %q", DefaultAllow, DefaultDeny, r.Default)}
	}
	ids := map[string]bool{}
	for _, list := range []struct {
		name  string
		rules []CommandRule
	}{{"allow", r.Allow}, {"deny", r.Deny}} {
		if len(list.rules) > MaxRulesPerList {
			return &RuleError{Layer: layer, Problem: fmt.Sprintf("%s holds %d rules; at most %d are allowed", list.name, len(list.rules), MaxRulesPerList)}
		}
		for i, rule := range list.rules {
			bad := func(format string, a ...any) error {
				return &RuleError{Layer: layer, List: list.name, Index: i, RuleID: rule.ID, Problem: fmt.Sprintf(format, a...)}
			}
			if problem := checkRuleID(rule.ID); problem != "" {
				return bad("%s", problem)
			}
			if ids[rule.ID] {
				return bad("id is used by another rule of this layer; rule ids must be unique")
			}
			ids[rule.ID] = true
			switch {
			case !strings.HasPrefix(rule.Executable, "/"):
				return bad("executable must be an absolute path")
			case len(rule.Executable) > MaxExecutableBytes:
				return bad("executable is %d bytes; at most %d are allowed", len(rule.Executable), MaxExecutableBytes)
			case strings.ContainsRune(rule.Executable, 0):
				return bad("executable must not contain NUL")
			case rule.Match != MatchExact && rule.Match != MatchPrefix:
				return bad("match must be %q or %q, got %q", MatchExact, MatchPrefix, rule.Match)
			case len(rule.Args) > MaxRuleArgs:
				return bad("args holds %d strings; at most %d are allowed", len(rule.Args), MaxRuleArgs)
			case len(rule.MatchExamples) > MaxExamplesPerRule || len(rule.NotMatchExamples) > MaxExamplesPerRule:
				return bad("at most %d match and %d not-match examples are allowed", MaxExamplesPerRule, MaxExamplesPerRule)
			case rule.Approval && list.name == "deny":
				return bad("approval applies to allow rules only; a denied command never runs")
			}
			total := 0
			for j, a := range rule.Args {
				if len(a) > MaxRuleArgBytes {
					return bad("args[%d] is %d bytes; at most %d are allowed", j, len(a), MaxRuleArgBytes)
				}
				if strings.ContainsRune(a, 0) {
					return bad("args[%d] must not contain NUL", j)
				}
				total += len(a)
			}
			if total > MaxRuleArgsBytes {
				return bad("args total %d bytes; at most %d are allowed", total, MaxRuleArgsBytes)
			}
		}
	}
	return nil
}

func checkRuleID(id string) string {
	if id == "" || len(id) > maxRuleIDBytes {
		return fmt.Sprintf("id must be 1..%d bytes", maxRuleIDBytes)
	}
	if !ids.ValidName(id, maxRuleIDBytes) {
		return "id may contain only A-Z, a-z, 0-9, '_', '.' and '-'"
	}
	return ""
}

// matches reports whether rule matches the resolved command.
func (rule CommandRule) matches(argv []string, exe Executable) bool {
	args := argv[1:]
	switch rule.Match {
	case MatchExact:
		if len(args) != len(rule.Args) {
			return false
		}
	case MatchPrefix:
		if len(args) < len(rule.Args) {
			return false
		}
	default:
		return false
	}
	for i, a := range rule.Args {
		if args[i] != a {
			return false
		}
	}
	// Arguments first: resolving the rule's executable costs system calls.
	ruleExe, err := resolveFile(rule.Executable)
	return err == nil && ruleExe.SameFile(exe)
}

// decide evaluates one layer: the first matching deny rule wins; otherwise a
// nonempty allow list needs a match; otherwise the default decides.
// approvalRule is the ID of the first allow rule from index i on that
// matches the command and requires approval: a matching rule that asks is
// never hidden by an earlier matching one that does not.
func (l Layer) approvalRule(argv []string, exe Executable, i int) string {
	for _, rule := range l.Rules.Allow[i:] {
		if rule.Approval && rule.matches(argv, exe) {
			return rule.ID
		}
	}
	return ""
}

func (l Layer) decide(argv []string, exe Executable) LayerDecision {
	for _, rule := range l.Rules.Deny {
		if rule.matches(argv, exe) {
			return LayerDecision{Layer: l.Name, RuleID: rule.ID, Reason: reasonDenyRule}
		}
	}
	if len(l.Rules.Allow) > 0 {
		for i, rule := range l.Rules.Allow {
			if rule.matches(argv, exe) {
				return LayerDecision{Allowed: true, Layer: l.Name, RuleID: rule.ID, Reason: reasonAllowRule, ApprovalRule: l.approvalRule(argv, exe, i)}
			}
		}
		return LayerDecision{Layer: l.Name, RuleID: ruleAllowlistMiss, Reason: reasonAllowlistMiss}
	}
	if l.Rules.Default == DefaultAllow {
		return LayerDecision{Allowed: true, Layer: l.Name, RuleID: ruleDefaultAllow, Reason: reasonDefaultAllow}
	}
	return LayerDecision{Layer: l.Name, RuleID: ruleDefaultDeny, Reason: reasonDefaultDeny}
}
