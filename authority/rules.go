package authority

import (
	"fmt"
	"os"
	"slices"
	"strings"
)

// Effect is what a rule set does when no rule decides.
type Effect string

// The two effects. The empty Effect denies.
const (
	Allow Effect = "allow"
	Deny  Effect = "deny"
)

// Rule names one exact value. Its ID is what decisions report.
type Rule struct {
	ID    string `json:"id"`
	Value string `json:"value"`
	// Approval, on an allow rule, is ApprovalRequired or empty: a call
	// this rule allows then runs only once the task's approver allows
	// that one call. A Go extension (docs/approvals.md).
	Approval string `json:"approval,omitempty"`
	// Roles, on an allow rule, are the roles a task must hold for a
	// value this rule allows: a missing one denies, naming it, this
	// rule and its layer. A Go extension.
	Roles []string `json:"roles,omitempty"`
}

// ApprovalRequired is the one value a rule's Approval takes: a rule can
// add a question, never take one away.
const ApprovalRequired = "required"

// Rules is one dimension of one layer: {default, allow, deny}. The zero value
// denies everything.
type Rules struct {
	Default Effect `json:"default"`
	Allow   []Rule `json:"allow"`
	Deny    []Rule `json:"deny"`
}

// AllowAll returns rules whose default allows.
func AllowAll() *Rules { return &Rules{Default: Allow} }

// Dimension names what a rule set constrains. Each dimension has its own
// matching: tool and server names match exactly, roots match whole leading
// path components.
type Dimension string

// The dimensions of a layer.
const (
	DimTools        Dimension = "tools"
	DimExecutables  Dimension = "executables"
	DimReadRoots    Dimension = "read_roots"
	DimWriteRoots   Dimension = "write_roots"
	DimMCPServers   Dimension = "mcp.servers"
	DimMCPTools     Dimension = "mcp.tools"
	DimMCPLaunchers Dimension = "mcp.launchers"
	DimToolNames    Dimension = "tool_names"
	DimCWDRoots     Dimension = "cwd_roots"
	// DimA2ARemotes holds the A2A remotes a layer admits, by exact name
	// (an [[authority]] layer's a2a_remotes).
	DimA2ARemotes Dimension = "a2a_remotes"
)

// Verdict is the outcome of one rule set on one value.
type Verdict struct {
	Allowed bool
	RuleID  string
	// Explicit is true when a configured rule decided, false for a default or
	// an allowlist miss.
	Explicit bool
	// ApprovalRule, on an allowed verdict, is the ID of the first allow
	// rule matching the value that requires approval, or empty.
	ApprovalRule string
	// Roles, on an allowed verdict, are the roles the allow rule that
	// matched requires.
	Roles []string
}

// Evaluate decides value under r: the first matching deny wins, then a
// non-empty allow list must match, then the default decides. A nil *Rules
// allows (an omitted dimension adds no constraint); a non-nil zero Rules
// denies.
func (r *Rules) Evaluate(dim Dimension, value string) Verdict {
	if r == nil {
		return Verdict{Allowed: true, RuleID: builtinID(dim, "default_allow")}
	}
	for _, rule := range r.Deny {
		if dim.matches(rule.Value, value) {
			return Verdict{Allowed: false, RuleID: rule.ID, Explicit: true}
		}
	}
	if len(r.Allow) > 0 {
		for i, rule := range r.Allow {
			if dim.matches(rule.Value, value) {
				return Verdict{Allowed: true, RuleID: rule.ID, Explicit: true, ApprovalRule: r.approvalRule(dim, value, i), Roles: rule.Roles}
			}
		}
		return Verdict{Allowed: false, RuleID: builtinID(dim, "allowlist_miss")}
	}
	if r.Default == Allow {
		return Verdict{Allowed: true, RuleID: builtinID(dim, "default_allow")}
	}
	return Verdict{Allowed: false, RuleID: builtinID(dim, "default_deny")}
}

// approvalRule is the ID of the first allow rule from index i on that
// matches value and requires approval: a matching rule that asks is never
// hidden by an earlier matching one that does not.
func (r *Rules) approvalRule(dim Dimension, value string, i int) string {
	for _, rule := range r.Allow[i:] {
		if rule.Approval == ApprovalRequired && dim.matches(rule.Value, value) {
			return rule.ID
		}
	}
	return ""
}

// validateApproval requires every rule's Approval to be empty or
// ApprovalRequired, and a deny rule's to be empty: a denied call never
// runs, so there is nothing to approve.
func (r *Rules) validateApproval() error {
	if r == nil {
		return nil
	}
	for _, rule := range r.Allow {
		if rule.Approval != "" && rule.Approval != ApprovalRequired {
			return fmt.Errorf("rule %q: approval must be %q or absent, got %q", rule.ID, ApprovalRequired, rule.Approval)
		}
	}
	for _, rule := range r.Deny {
		if rule.Approval != "" {
			return fmt.Errorf("rule %q: approval applies to allow rules only; a denied call never runs", rule.ID)
		}
		if len(rule.Roles) > 0 {
			return fmt.Errorf("rule %q: roles apply to allow rules only; a denied call is denied to every role", rule.ID)
		}
	}
	for _, rule := range r.Allow {
		if err := ValidateRoles(rule.Roles); err != nil {
			return fmt.Errorf("rule %q: %w", rule.ID, err)
		}
	}
	return nil
}

func builtinID(dim Dimension, what string) string {
	return "builtin." + string(dim) + "." + what
}

// matches reports whether a rule value covers value in this dimension.
func (d Dimension) matches(rule, value string) bool {
	switch d {
	case DimReadRoots, DimWriteRoots, DimCWDRoots:
		return WithinRoot(rule, value)
	case DimExecutables, DimMCPLaunchers:
		return rule == value || sameFile(rule, value)
	default:
		return rule == value
	}
}

// sameFile reports whether two absolute paths name the same file: the
// files they resolve to (every symlink followed) have the same device and
// inode. A symlink or a hard link to a launcher is that launcher, as it is
// for shell command rules. A path that does not resolve matches nothing but
// its own spelling.
func sameFile(a, b string) bool {
	if !strings.HasPrefix(a, "/") || !strings.HasPrefix(b, "/") {
		return false
	}
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

// WithinRoot reports whether the workspace-relative path p lies in the subtree
// root, comparing whole path components: "docs" covers "docs" and "docs/a",
// never "docs2". "." covers everything.
func WithinRoot(root, p string) bool {
	root = strings.Trim(root, "/")
	p = strings.Trim(p, "/")
	if root == "." || root == "" {
		return true
	}
	if p == root {
		return true
	}
	return strings.HasPrefix(p, root) && p[len(root)] == '/'
}

// Clone returns a deep copy of r (nil stays nil).
func (r *Rules) Clone() *Rules {
	if r == nil {
		return nil
	}
	c := &Rules{Default: r.Default}
	c.Allow = append([]Rule(nil), r.Allow...)
	for i := range c.Allow {
		c.Allow[i].Roles = slices.Clone(c.Allow[i].Roles)
	}
	c.Deny = append([]Rule(nil), r.Deny...)
	return c
}
