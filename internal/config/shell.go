package config

import (
	"fmt"

	"github.com/pabloagent/pablo/internal/shell"
)

// Shell returns the rules in the form the shell runner's policy takes.
func (c *CommandRules) Shell() shell.CommandRules {
	conv := func(in []CommandRule) []shell.CommandRule {
		var out []shell.CommandRule
		for _, r := range in {
			sr := shell.CommandRule{ID: r.ID, Executable: r.Executable, Args: r.Args, Match: r.Match}
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
