package pablo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/internal/redact"
	"github.com/pabloagent/pablo/internal/shell"
	"github.com/pabloagent/pablo/ledger"
)

// ShellDescription is what a model reads about shell.run.
const ShellDescription = "Run one command in the workspace with /bin/sh. stdin is closed; the environment holds only " +
	"PATH=/usr/bin:/bin, LANG=C and admitted PABLO_TASK_* variables. Returns stdout, stderr and the exit code. " +
	"A command policy may allow only literal commands: no pipes, redirections, expansions or globs."

// shellRunner builds shell.run for a workspace directory.
func (d *Deployment) shellRunner(workspace string) (*shell.Runner, error) {
	pol, err := d.c.ShellPolicy()
	if err != nil {
		return nil, err
	}
	o := &d.Options
	env := shell.Environment{Values: o.Shell.Environment.Values, AllowedNames: o.Shell.Environment.AllowedNames, AllowAnyName: o.Shell.Environment.AllowedNames == nil}
	for _, l := range d.c.AuthorityLayers() {
		if e := l.Shell.Environment; e != nil {
			env.AllowedNames = intersect(env.AllowedNames, e.AllowedNames, env.AllowAnyName)
			env.AllowAnyName = false
		}
	}
	var cwdRules []struct {
		layer string
		rules *authority.Rules
	}
	if o.Shell.CWDRoots != nil {
		cwdRules = append(cwdRules, struct {
			layer string
			rules *authority.Rules
		}{"options/shell", o.Shell.CWDRoots})
	}
	for _, l := range d.c.AuthorityLayers() {
		if l.Shell.CWDRoots != nil {
			cwdRules = append(cwdRules, struct {
				layer string
				rules *authority.Rules
			}{l.ID, l.Shell.CWDRoots})
		}
	}
	return shell.New(shell.Options{
		Workspace: workspace,
		Policy:    pol,
		// Under a literal command policy the resolved program is executed
		// directly: nothing is interpreted at all, and one exec of the
		// shell is saved (see docs/differences.md).
		DirectExec: pol != nil,
		CheckCwd: func(rel string) shell.Decision {
			for _, c := range cwdRules {
				v := c.rules.Evaluate(authority.DimCWDRoots, rel)
				if !v.Allowed {
					return shell.Decision{Allowed: false, Layer: c.layer, RuleID: v.RuleID, Reason: "cwd_roots"}
				}
			}
			return shell.Decision{Allowed: true}
		},
		Environment:     env,
		MaxToolDuration: time.Duration(o.Limits.MaxToolDurationMS) * time.Millisecond,
		MaxOutputBytes:  o.Limits.MaxToolOutputBytes,
	})
}

func intersect(have, ceiling []string, haveAny bool) []string {
	out := []string{}
	for _, n := range ceiling {
		if haveAny || slices.Contains(have, n) {
			out = append(out, n)
		}
	}
	return out
}

// shellCatalog serves shell.run.
type shellCatalog struct {
	runner  *shell.Runner
	secrets *redact.Set
}

func (c *shellCatalog) Tools() []authority.ToolSpec {
	return []authority.ToolSpec{{ID: authority.ShellRun, Description: ShellDescription, InputSchema: json.RawMessage(shell.InputSchema),
		// The launcher is what policy.executables governs.
		Resources: func(map[string]any) []authority.Resource {
			return []authority.Resource{{Kind: authority.ResourceExecutable, Value: "/bin/sh"}}
		}}}
}

func (c *shellCatalog) Call(ctx context.Context, call authority.Call) ledger.ToolResult {
	var req shell.Request
	dec := json.NewDecoder(bytes.NewReader(call.Arguments))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return ledger.ToolResult{Status: ledger.ToolInvalidArguments, Code: ledger.FailInvalidToolArguments}
	}
	if out := ToolOutput(ctx); out != nil {
		req.OnOutput = out
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
	var de *shell.DeniedError
	var re *shell.RunError
	var ae *shell.ArgumentError
	switch {
	case err == nil:
		if res.ExitCode != nil && *res.ExitCode != 0 || res.Signal != nil {
			return ledger.ToolResult{Status: ledger.ToolRecoverableError, Output: payload, Masked: masked}
		}
		return ledger.ToolResult{Status: ledger.ToolCompleted, Output: payload, Masked: masked}
	case errors.As(err, &de):
		return ledger.ToolResult{Status: ledger.ToolPolicyDenied, Rule: de.Decision.RuleID,
			Decision: authority.Decision{Layer: de.Decision.Layer, RuleID: de.Decision.RuleID, Reason: de.Decision.Reason}, Output: map[string]any{"error": map[string]any{"code": "policy_denied", "reason": de.Decision.Reason, "rule_id": de.Decision.RuleID}}}
	case errors.As(err, &ae):
		return ledger.ToolResult{Status: ledger.ToolInvalidArguments, Code: ledger.FailInvalidToolArguments}
	case errors.As(err, &re):
		r := ledger.ToolResult{Status: ledger.ToolStatus(re.Status), Output: payload, Masked: masked}
		switch r.Status {
		case ledger.ToolOutputLimit:
			r.Limit = ledger.LimitToolOutputBytes
		case ledger.ToolCleanupFailed:
			r.Code = ledger.FailToolCleanup
		case ledger.ToolSpawnFailed:
			r.Code = ledger.FailToolExecution
		}
		return r
	}
	return ledger.ToolResult{Status: ledger.ToolIOFailed, Code: ledger.FailToolExecution}
}
