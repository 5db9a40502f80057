package config

import (
	"fmt"
	"slices"
	"time"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/internal/shell"
)

// Shell returns the rules in the form the shell runner's policy takes.
func (c *CommandRules) Shell() shell.CommandRules {
	conv := func(in []CommandRule) []shell.CommandRule {
		var out []shell.CommandRule
		for _, r := range in {
			sr := shell.CommandRule{ID: r.ID, Executable: r.Executable, Args: r.Args, Match: r.Match, Approval: r.Approval == authority.ApprovalRequired}
			if sr.Args == nil {
				sr.Args = []string{}
			}
			if r.Examples != nil {
				sr.MatchExamples, sr.NotMatchExamples = r.Examples.Match, r.Examples.NotMatch
			}
			out = append(out, sr)
		}
		return out
	}
	return shell.CommandRules{Default: c.Default, Allow: conv(c.Allow), Deny: conv(c.Deny)}
}

// checkShellExamples verifies every rule's example commands.
func (d *Deployment) checkShellExamples() error {
	check := func(ptr string, c *CommandRules) error {
		if c == nil {
			return nil
		}
		if err := shell.CheckExamples(c.Shell()); err != nil {
			return &Error{Code: CodeInvalidValue, Option: ptr, Message: err.Error()}
		}
		return nil
	}
	if err := check("/options/shell/commands", d.Options.Shell.Commands); err != nil {
		return err
	}
	for i, l := range d.layers {
		if err := check(fmt.Sprintf("/authority/%d/shell/commands", i), l.Shell.Commands); err != nil {
			err.(*Error).AuthorityID = l.ID
			return err
		}
	}
	return nil
}

// ShellPolicy returns the literal command policy of this deployment: the
// ordinary shell.commands and every authority layer's, each of which must
// allow. It is nil when no layer configures commands.
func (d *Deployment) ShellPolicy() (*shell.Policy, error) {
	var layers []shell.Layer
	if c := d.Options.Shell.Commands; c != nil {
		layers = append(layers, shell.Layer{Name: "options/shell", Rules: c.Shell()})
	}
	for _, l := range d.layers {
		if c := l.Shell.Commands; c != nil {
			layers = append(layers, shell.Layer{Name: l.ID, Rules: c.Shell()})
		}
	}
	if len(layers) == 0 {
		return nil, nil
	}
	return shell.NewPolicy(layers...)
}

// ShellOptions returns the options of shell.run over a workspace
// directory: the literal command policy, the working directories every
// layer's cwd_roots admit, the environment every layer allows, and the
// tool bounds.
func (d *Deployment) ShellOptions(workspace string) (shell.Options, error) {
	pol, err := d.ShellPolicy()
	if err != nil {
		return shell.Options{}, err
	}
	o := &d.Options
	return shell.Options{
		Workspace: workspace,
		Policy:    pol,
		// Under a literal command policy the resolved program is executed
		// directly: nothing is interpreted at all, and one exec of the
		// shell is saved (see docs/differences.md).
		DirectExec:      pol != nil,
		CheckCwd:        d.shellCwd(),
		Environment:     d.shellEnvironment(),
		MaxToolDuration: time.Duration(o.Limits.MaxToolDurationMS) * time.Millisecond,
		MaxOutputBytes:  o.Limits.MaxToolOutputBytes,
		Sandbox:         d.ShellSandbox(),
	}, nil
}

// shellEnvironment is options.shell.environment narrowed by every layer's
// allowed_names.
func (d *Deployment) shellEnvironment() shell.Environment {
	e := d.Options.Shell.Environment
	env := shell.Environment{Values: e.Values, AllowedNames: e.AllowedNames, AllowAnyName: e.AllowedNames == nil}
	for _, l := range d.layers {
		if le := l.Shell.Environment; le != nil {
			var kept []string
			for _, n := range le.AllowedNames {
				if env.AllowAnyName || slices.Contains(env.AllowedNames, n) {
					kept = append(kept, n)
				}
			}
			env.AllowedNames, env.AllowAnyName = append([]string{}, kept...), false
		}
	}
	return env
}

// shellCwd decides a shell.run working directory: options.shell.cwd_roots
// and every layer's must allow it; a denial names the first that does not.
func (d *Deployment) shellCwd() func(rel string) shell.Decision {
	type layerRules struct {
		layer string
		rules *authority.Rules
	}
	var all []layerRules
	if r := d.Options.Shell.CWDRoots; r != nil {
		all = append(all, layerRules{"options/shell", r})
	}
	for _, l := range d.layers {
		if l.Shell.CWDRoots != nil {
			all = append(all, layerRules{l.ID, l.Shell.CWDRoots})
		}
	}
	return func(rel string) shell.Decision {
		for _, c := range all {
			if v := c.rules.Evaluate(authority.DimCWDRoots, rel); !v.Allowed {
				return shell.Decision{Allowed: false, Layer: c.layer, RuleID: v.RuleID, Reason: "cwd_roots"}
			}
		}
		return shell.Decision{Allowed: true}
	}
}

// CheckShellExamples verifies every command rule's match and not-match
// examples again, as loading did: a readiness check reports it per node.
func (d *Deployment) CheckShellExamples() error { return d.checkShellExamples() }
