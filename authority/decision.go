package authority

import "fmt"

// Decision is the answer to one request. A denial always names the layer and
// the rule that denied; an allowed decision names the layer and rule most
// specific to the grant (the first explicit allow rule met), and Trail lists
// the verdict of every layer consulted.
type Decision struct {
	Allowed bool   `json:"allowed"`
	Layer   string `json:"layer"`
	RuleID  string `json:"rule_id"`
	Reason  string `json:"reason"`
	Trail   []Step `json:"trail,omitempty"`
	// NeedsApproval, on an allowed decision, says the call may run only
	// once the task's approver allows that one call.
	NeedsApproval bool `json:"needs_approval,omitempty"`
	// ApprovalBy, when NeedsApproval is set, names what required the
	// approval: the first layer and rule (or class key) that asked.
	ApprovalBy *ApprovalSource `json:"approval_required_by,omitempty"`
	// Sandbox, on an allowed decision of a call that runs in a process,
	// is the sandbox it runs in: "off" (the host's explicit choice) or
	// "required filesystem=F network=N" (internal/sandbox's Profile).
	Sandbox string `json:"sandbox,omitempty"`
	// Egress, on the decision of a sandbox's egress proxy (network
	// allowlist), is what it decided about one connection: the ledger's
	// decision records carry it, host and port included.
	Egress *EgressDecision `json:"egress,omitempty"`
	// MissingRole, on a denial because the capability requires a role
	// the task does not hold, names that role; Layer and RuleID say
	// where the requirement was declared.
	MissingRole string `json:"missing_role,omitempty"`
}

// EgressDecision is the egress proxy's verdict on one request of a
// sandboxed process under network allowlist: the host and port it asked
// for, whether it was carried, the allow entry that allowed it, or why it
// was not.
type EgressDecision struct {
	// Method is CONNECT, or a plain-HTTP request's method.
	Method string `json:"method"`
	Host   string `json:"host"`
	Port   int    `json:"port"`
	// Allowed says whether the proxy carried the request.
	Allowed bool `json:"allowed"`
	// Rule is the allow entry that allowed it ("" when denied).
	Rule string `json:"rule,omitempty"`
	// Reason says why it was denied, or why an allowed one could not be
	// carried ("" when it was).
	Reason string `json:"reason,omitempty"`
}

// LayerEgress is the layer an egress decision names: the sandbox's
// network allowlist, enforced by its proxy.
const LayerEgress = "sandbox.network"

// RuleEgressUnlisted is the rule of an egress decision no allow entry
// allowed.
const RuleEgressUnlisted = "builtin.egress_unlisted"

// Decision is e as an authority decision of layer LayerEgress: the rule
// is the allow entry, or RuleEgressUnlisted.
func (e EgressDecision) Decision() Decision {
	d := Decision{Allowed: e.Allowed, Layer: LayerEgress, RuleID: e.Rule, Egress: &e}
	if e.Rule == "" {
		d.RuleID = RuleEgressUnlisted
	}
	target := fmt.Sprintf("%s %s:%d", e.Method, e.Host, e.Port)
	switch {
	case !d.Allowed:
		d.Reason = target + ": " + e.Reason
	case e.Reason != "":
		d.Reason = target + " allowed by " + e.Rule + "; " + e.Reason
	default:
		d.Reason = target + " allowed by " + e.Rule
	}
	return d
}

// ApprovalSource names what made a call need approval: a rule of a layer
// (`approval = "required"`), a class key of options.approvals, the host's
// list, or a privileged default.
type ApprovalSource struct {
	Layer  string `json:"layer"`
	RuleID string `json:"rule_id"`
}

// RequireApproval marks an allowed decision as needing approval because
// of rule in layer. The first requirement is kept: a later one adds no
// question and never replaces what a lower layer said. A denied decision
// stays denied.
func (d *Decision) RequireApproval(layer, rule string) {
	if !d.Allowed {
		return
	}
	d.NeedsApproval = true
	if d.ApprovalBy == nil {
		d.ApprovalBy = &ApprovalSource{Layer: layer, RuleID: rule}
	}
}

// ApprovalSourceOf is what required approval of d: its ApprovalBy, or,
// for a decision some host authority marked NeedsApproval without naming
// a source, builtin.approval.
func ApprovalSourceOf(d Decision) ApprovalSource {
	if d.ApprovalBy != nil {
		return *d.ApprovalBy
	}
	return ApprovalSource{Layer: "approval", RuleID: RuleApproval}
}

// Step is one layer's verdict on one dimension.
type Step struct {
	Layer     string    `json:"layer"`
	Dimension Dimension `json:"dimension"`
	Value     string    `json:"value"`
	Allowed   bool      `json:"allowed"`
	RuleID    string    `json:"rule_id"`
}

// Err returns nil for an allowed decision and a *DeniedError otherwise.
func (d Decision) Err() error {
	if d.Allowed {
		return nil
	}
	return &DeniedError{Decision: d}
}

// The built-in decision IDs for mandatory checks.
const (
	RuleToolUnavailable = "builtin.tool_unavailable"
	RuleWorkspace       = "builtin.workspace"
	RuleSymlink         = "builtin.symlink"
	// RuleRepoGitDir denies a write under filesystem scope repo-write
	// into a repository's .git, at any depth: its hooks, config and refs
	// are never the task's to write.
	RuleRepoGitDir = "builtin.repo_write.git_dir"
	// RuleRemotesGitDir denies a write of the workspace tools into a
	// repository's .git, at any depth, under a deployment that uses
	// network repository-host-only: the remotes its config names are the
	// next task's allowlist.
	RuleRemotesGitDir = "builtin.repository_host_only.git_dir"
	// RuleRepoOutside denies a write under filesystem scope repo-write
	// that would land outside the work tree of the repository holding the
	// workspace: in a nested repository of its own.
	RuleRepoOutside         = "builtin.repo_write.outside_repository"
	RuleEnvironment         = "builtin.environment"
	RuleUnsupportedPlatform = "builtin.unsupported_platform"
	RuleUnconfiguredServer  = "builtin.mcp.unconfigured_server"
	RuleNarrowing           = "builtin.narrowing"
	// RuleApproval denies a call that needed approval and did not get it:
	// the approver rejected it, could not be asked, or the task ended
	// while it waited.
	RuleApproval = "builtin.approval"
	// RuleApprovalUnconfinedShell requires approval of a shell.run with
	// the sandbox off and no literal command policy: anything runs,
	// touching anything (a privileged default, docs/approvals.md).
	RuleApprovalUnconfinedShell = "builtin.approval.unconfined_shell"
	// RuleApprovalShellNetwork requires approval of a sandboxed shell.run
	// whose sandbox allows the network (a privileged default).
	RuleApprovalShellNetwork = "builtin.approval.shell_network"
	// RuleApprovalUnrestrictedNetwork requires approval of every call of
	// a tool whose sandbox has network "unrestricted-with-approval": the
	// host's network, each call asked about; no "allow for this task"
	// answer covers a later one.
	RuleApprovalUnrestrictedNetwork = "builtin.approval.unrestricted_network"
)

// LayerDefaults is the layer the privileged defaults' approval
// requirements are reported under.
const LayerDefaults = "builtin"

// LayerConfiguration is the layer name of decisions made because the host did
// not configure a capability at all.
const LayerConfiguration = "configuration"

// DeniedError is the error form of a denial.
type DeniedError struct{ Decision Decision }

func (e *DeniedError) Error() string {
	return fmt.Sprintf("denied by layer %q rule %q: %s", e.Decision.Layer, e.Decision.RuleID, e.Decision.Reason)
}

// Is makes errors.Is(err, ErrDenied) true.
// A denial naming a missing role also matches ErrRoleMissing.
func (e *DeniedError) Is(target error) bool {
	return target == ErrDenied || (target == ErrRoleMissing && e.Decision.MissingRole != "")
}
