package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/authority"
)

// policyCommand implements `pablo policy check CAPABILITY_ID` and `pablo
// policy check --shell 'COMMAND'`: offline, the decision a run of the
// deployment makes on such a call, with the deciding layer and rule. It
// asks pablo.Deployment.Decide, the function the run loop decides calls
// with, so a path outside the workspace, a symlink or a denied command is
// denied here exactly as in a run. Exit 0 when allowed, 1 when denied.
func policyCommand(ctx context.Context, args []string, h *host) error {
	if len(args) == 0 || args[0] != "check" {
		return usagef("usage: pablo policy check CAPABILITY_ID --config F [--bind NAME=DIR]... [--read PATH] [--write PATH] [--json]")
	}
	p, err := parseArgs(args[1:], "policy check")
	if err != nil {
		return err
	}
	id, calls, err := policyCalls(p)
	if err != nil {
		return err
	}
	d, err := loadDeployment(ctx, p, h, nil)
	if err != nil {
		return err
	}
	if len(p.args) == 1 {
		if err := knownCapability(ctx, d, h, "policy check", string(id)); err != nil {
			return err
		}
	}
	// Every path is decided as its own call; the first denial decides.
	var dec authority.Decision
	for i, a := range calls {
		next, err := d.Decide(ctx, id, a)
		if err != nil {
			if errors.Is(err, authority.ErrInvalidArguments) {
				return usagef("policy check %s: %v", id, err)
			}
			return err
		}
		if i == 0 || !next.Allowed {
			dec = next
		}
		if !dec.Allowed {
			break
		}
	}
	var shellInfo *shellDetail
	if _, ok := p.values["shell"]; ok {
		shellInfo = shellDetails(d, p.one("shell"))
	}
	if p.bools["json"] {
		out, _ := json.Marshal(struct {
			Capability string `json:"capability"`
			authority.Decision
			*shellDetail
		}{string(id), dec, shellInfo})
		fmt.Fprintf(h.stdout, "%s\n", out)
	} else {
		verdict := "denied"
		if dec.Allowed {
			verdict = "allowed"
		}
		fmt.Fprintf(h.stdout, "%s %s\n  layer: %s\n  rule:  %s\n  why:   %s\n", verdict, id, dec.Layer, dec.RuleID, dec.Reason)
		for _, s := range dec.Trail {
			mark := "allow"
			if !s.Allowed {
				mark = "deny"
			}
			fmt.Fprintf(h.stdout, "    %-5s %-24s %-14s %s\n", mark, s.Layer, s.Dimension, s.RuleID)
		}
		if shellInfo != nil && len(shellInfo.Argv) > 0 {
			b, _ := json.Marshal(shellInfo.Argv)
			fmt.Fprintf(h.stdout, "  argv:  %s\n", b)
		}
		if shellInfo != nil && shellInfo.Executable != nil {
			b, _ := json.Marshal(shellInfo.Executable)
			fmt.Fprintf(h.stdout, "  executable: %s\n", b)
		}
		if dec.Sandbox != "" {
			fmt.Fprintf(h.stdout, "  sandbox: %s\n", dec.Sandbox)
		}
		if dec.NeedsApproval {
			src := authority.ApprovalSourceOf(dec)
			fmt.Fprintf(h.stdout, "  approval: required by layer %s rule %s\n", src.Layer, src.RuleID)
		}
		if dec.RuleID == "builtin.sandbox.unavailable" {
			fmt.Fprintf(h.stdout, "  fix:   install the Debian package bubblewrap (apt-get install bubblewrap), or set options.shell.sandbox.mode = \"off\" to run commands unconfined; pablo doctor says why\n")
		}
	}
	if !dec.Allowed {
		return &exitError{code: 1}
	}
	return nil
}

// policyCalls turns the command line into the capability and the
// arguments of each call to decide: one call per --read or --write path of
// a workspace tool (the tool decides which roots it needs, as in a run),
// one shell.run call in the workspace for --shell, or the capability alone.
func policyCalls(p *parsed) (authority.ID, []json.RawMessage, error) {
	paths := append(append([]string{}, p.values["read"]...), p.values["write"]...)
	if cmd, ok := p.values["shell"]; ok {
		if len(p.args) > 0 || len(paths) > 0 {
			return "", nil, usagef("--shell takes the command; give no CAPABILITY_ID, --read or --write")
		}
		a, _ := json.Marshal(map[string]string{"command": cmd[0], "cwd": "."})
		return authority.ShellRun, []json.RawMessage{a}, nil
	}
	if remote, ok := p.values["remote"]; ok {
		if len(p.args) > 0 || len(paths) > 0 {
			return "", nil, usagef("--remote takes the remote's name; give no CAPABILITY_ID, --read, --write or --shell")
		}
		// A spawn_remote as a model writes it: what the layers and the
		// approvals say of a delegation to that remote.
		a, _ := json.Marshal(map[string]any{"action": "spawn_remote", "remote_request": map[string]any{"remote": remote[0],
			"parts": []any{map[string]string{"text": "policy check"}}, "accepted_output_modes": []string{"text/plain"}}})
		return authority.Subagent, []json.RawMessage{a}, nil
	}
	if len(p.args) != 1 {
		return "", nil, usagef("policy check takes exactly one CAPABILITY_ID")
	}
	id := authority.ID(p.args[0])
	if len(paths) == 0 {
		return id, []json.RawMessage{nil}, nil
	}
	var calls []json.RawMessage
	for _, path := range paths {
		var a any
		switch id {
		case authority.FSRead, authority.FSList:
			a = map[string]any{"path": path}
		case authority.FSSearch:
			a = map[string]any{"path": path, "query": "x"}
		case authority.FSWrite:
			a = map[string]any{"path": path, "text": "", "expected_revision": nil}
		case authority.FSEdit:
			a = map[string]any{"path": path, "expected_revision": zeroRevision, "old_text": "x", "new_text": ""}
		default:
			return "", nil, usagef("--read and --write name a path of a workspace tool (fs.read, fs.list, fs.search, fs.write, fs.edit); a run checks no path for %s", id)
		}
		b, _ := json.Marshal(a)
		calls = append(calls, b)
	}
	return id, calls, nil
}

const zeroRevision = "0000000000000000000000000000000000000000000000000000000000000000"

// shellDetail is what the literal command policy parsed: shown with the
// decision, never the command text itself.
type shellDetail struct {
	Argv       []string `json:"argv,omitempty"`
	Executable any      `json:"executable,omitempty"`
}

func shellDetails(d *pablo.Deployment, command string) *shellDetail {
	c, ok := d.ParseShellCommand(command)
	if !ok {
		return nil
	}
	sd := &shellDetail{Argv: c.Argv}
	if c.Executable != "" {
		sd.Executable = struct {
			Path      string `json:"path"`
			Canonical string `json:"canonical"`
		}{c.Executable, c.Canonical}
	}
	return sd
}
