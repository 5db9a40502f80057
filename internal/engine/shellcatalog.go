package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/internal/egress"
	"github.com/pabloagent/pablo/internal/redact"
	"github.com/pabloagent/pablo/internal/sandbox"
	"github.com/pabloagent/pablo/internal/shell"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/ledger/outcome"
)

// NewShellCatalog is the catalog of shell.run over runner; secrets masks
// the start of a secret a capture bound cut, and literal says a literal
// command policy decides what may run.
func NewShellCatalog(runner *shell.Runner, secrets *redact.Set, literal bool) *ShellCatalog {
	return &ShellCatalog{runner: runner, secrets: secrets, literal: literal}
}

// shellDescription is what a model reads about shell.run.
const shellDescription = "Run one command in the workspace with /bin/sh. stdin is closed; the environment holds only " +
	"PATH=/usr/bin:/bin, LANG=C and admitted PABLO_TASK_* variables. Returns stdout, stderr and the exit code. " +
	"A command policy may allow only literal commands: no pipes, redirections, expansions or globs."

// ShellCatalog serves shell.run: the runtime's own catalog, which no host
// can build, known by type where a child's view is narrowed.
type ShellCatalog struct {
	runner  *shell.Runner
	secrets *redact.Set
	// literal: a literal command policy decides what may run.
	literal bool
}

func (c *ShellCatalog) Tools() []authority.ToolSpec {
	return []authority.ToolSpec{{ID: authority.ShellRun, Description: shellDescription, InputSchema: json.RawMessage(shell.InputSchema),
		// The launcher is what policy.executables governs.
		Resources: func(map[string]any) []authority.Resource {
			return []authority.Resource{{Kind: authority.ResourceExecutable, Value: "/bin/sh"}}
		}}}
}

func (c *ShellCatalog) Call(ctx context.Context, call authority.Call) ledger.ToolResult {
	var req shell.Request
	dec := json.NewDecoder(bytes.NewReader(call.Arguments))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return ledger.ToolResult{Status: outcome.ToolInvalidArguments, Code: outcome.FailInvalidToolArguments}
	}
	if out := ToolOutput(ctx); out != nil {
		req.OnOutput = out
	}
	req.IdempotencyKey = call.IdempotencyKey
	// Under network allowlist, each decision of the egress proxy is the
	// call's tool.egress event and a ledger decision record as it is made,
	// and all of them are part of the call's recorded result.
	var egressMu sync.Mutex
	var decisions []egress.Decision
	record := ToolEgress(ctx)
	req.OnEgress = func(d egress.Decision) error {
		var err error
		if record != nil {
			if err = record(string(authority.ShellRun), EgressDecision(d)); err != nil && d.Allowed {
				d.Reason = "allowed, but the decision could not be recorded, so it was not carried"
			}
		}
		egressMu.Lock()
		decisions = append(decisions, d)
		egressMu.Unlock()
		return err
	}
	res, err := c.runner.Run(ctx, req)
	masked := 0
	if res != nil {
		// A stream the capture bound cut may end with the start of a
		// secret whose rest was dropped: mask that start too.
		var n int
		if res.StdoutTruncated {
			res.Stdout, n = c.secrets.MaskCut(res.Stdout)
			masked += n
		}
		if res.StderrTruncated {
			res.Stderr, n = c.secrets.MaskCut(res.Stderr)
			masked += n
		}
	}
	payload := map[string]any{"shell": res}
	if len(decisions) > 0 {
		payload["egress"] = decisions
	}
	var de *shell.DeniedError
	var re *shell.RunError
	var ae *shell.ArgumentError
	switch {
	case err == nil:
		if res.ExitCode != nil && *res.ExitCode != 0 || res.Signal != nil {
			return ledger.ToolResult{Status: outcome.ToolRecoverableError, Output: payload, Masked: masked}
		}
		return ledger.ToolResult{Status: outcome.ToolCompleted, Output: payload, Masked: masked}
	case errors.As(err, &de):
		return ledger.ToolResult{Status: outcome.ToolPolicyDenied, Rule: de.Decision.RuleID,
			Decision: authority.Decision{Layer: de.Decision.Layer, RuleID: de.Decision.RuleID, Reason: de.Decision.Reason}, Output: map[string]any{"error": map[string]any{"code": "policy_denied", "reason": de.Decision.Reason, "rule_id": de.Decision.RuleID}}}
	case errors.As(err, &ae):
		return ledger.ToolResult{Status: outcome.ToolInvalidArguments, Code: outcome.FailInvalidToolArguments}
	case errors.As(err, &re):
		r := ledger.ToolResult{Status: outcome.ToolStatus(re.Status), Output: payload, Masked: masked}
		switch r.Status {
		case outcome.ToolOutputLimit:
			r.Limit = outcome.LimitToolOutputBytes
		case outcome.ToolCleanupFailed:
			r.Code = outcome.FailToolCleanup
		case outcome.ToolSpawnFailed:
			r.Code = outcome.FailToolExecution
		}
		return r
	}
	return ledger.ToolResult{Status: outcome.ToolIOFailed, Code: outcome.FailToolExecution}
}

// Privileged says whether a shell.run needs approval by default: one
// that runs with the sandbox off and no literal command policy (anything
// may run, touching anything), or one whose sandbox allows the network. A
// sandboxed call without the network is bounded by its sandbox, and an
// unsandboxed one under a literal command policy by the policy: neither
// asks.
func (c *ShellCatalog) Privileged(id authority.ID) string {
	if id != authority.ShellRun {
		return ""
	}
	p := c.runner.Sandbox().Normalized()
	switch {
	case p.Mode == sandbox.Off && !c.literal:
		return authority.RuleApprovalUnconfinedShell
	case p.Mode != sandbox.Off && p.Network == sandbox.UnrestrictedWithApproval:
		return authority.RuleApprovalUnrestrictedNetwork
	case p.Mode != sandbox.Off && p.Network == sandbox.Allow:
		return authority.RuleApprovalShellNetwork
	}
	return ""
}

// Sandbox is the sandbox shell.run runs in.
func (c *ShellCatalog) Sandbox(id authority.ID) (sandbox.Profile, bool) {
	return c.runner.Sandbox(), id == authority.ShellRun
}

// DecideCall decides a shell.run over the literal command policy.
func (c *ShellCatalog) DecideCall(ctx context.Context, call authority.Call) (authority.Decision, bool) {
	var req shell.Request
	dec := json.NewDecoder(bytes.NewReader(call.Arguments))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return authority.Decision{}, false
	}
	sd, err := c.runner.DecideContext(ctx, req)
	if err != nil {
		return authority.Decision{}, false
	}
	d := authority.Decision{Allowed: sd.Allowed, Layer: sd.Layer, RuleID: sd.RuleID, Reason: sd.Reason}
	if sd.ApprovalRule != "" {
		d.RequireApproval(sd.ApprovalLayer, sd.ApprovalRule)
	}
	return d, true
}
