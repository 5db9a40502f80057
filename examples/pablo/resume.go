package main

import (
	"context"
	"errors"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/ledger"
)

// resumeCommand continues an interrupted task from its store: `pablo
// resume TASK_ID --store …`, with run's flags.
func resumeCommand(ctx context.Context, args []string, h *host) error {
	p, err := parseArgs(args, "resume")
	if err != nil {
		return preAdmission(h, p, "invalid_arguments", err)
	}
	if len(p.args) != 1 || p.args[0] == "" {
		return preAdmission(h, p, "invalid_arguments", usagef("usage: pablo resume TASK_ID --config F --bind workspace=DIR --store PATH|URL [--json]"))
	}
	if storeValue(h, p) == "" {
		return preAdmission(h, p, "invalid_arguments", usagef("pablo resume needs the store that holds the task: --store PATH|URL, or $PABLO_STORE"))
	}
	overrides, err := runOverrides(p)
	if err != nil {
		return preAdmission(h, p, "invalid_arguments", err)
	}
	d, err := loadDeployment(ctx, p, h, overrides)
	if err != nil {
		return preAdmission(h, p, "invalid_configuration", err)
	}
	id := p.args[0]
	return hostTask(ctx, h, p, d, true, func(ctx context.Context, rt *pablo.Runtime, approver pablo.Approver) (*pablo.Task, error) {
		return rt.ResumeTask(ctx, id, pablo.ResumeRequest{Approver: approver, Roles: p.values["role"], Kind: p.one("kind")})
	})
}

// startFailure reports a task that could not start or resume: with
// --json, the pre-admission envelope naming why. A task another host
// holds (its lease is live) exits 3, like `ledger recover`; any other
// failure exits 2.
func startFailure(h *host, p *parsed, err error) error {
	code := "invalid_arguments"
	switch {
	case errors.Is(err, ledger.ErrTaskSettled):
		code = "task_settled"
	case errors.Is(err, ledger.ErrLeaseLive), errors.Is(err, ledger.ErrLocked):
		code = "lease_live"
	case errors.Is(err, ledger.ErrNotFound):
		code = "task_not_found"
	case errors.Is(err, pablo.ErrNotResumable):
		code = "not_resumable"
	}
	if p != nil && p.bools["json"] {
		writeJSON(h, pablo.PreAdmissionFailure(code, message(err)))
	}
	if code == "lease_live" {
		return &exitError{code: 3, err: err}
	}
	return &exitError{code: 2, err: err}
}
