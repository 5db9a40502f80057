package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/pabloagent/pablo/authority"
)

// policyCommand implements `pablo policy check CAPABILITY_ID`: the decision
// the deployment's authority makes, offline, with the deciding layer and
// rule. Exit 0 when allowed, 1 when denied.
func policyCommand(_ context.Context, args []string, h *host) error {
	if len(args) == 0 || args[0] != "check" {
		return usagef("usage: pablo policy check CAPABILITY_ID --config F [--bind NAME=DIR]... [--read PATH] [--write PATH] [--json]")
	}
	p, err := parseArgs(args[1:], "policy check")
	if err != nil {
		return err
	}
	if _, ok := p.values["shell"]; ok {
		return shellCheck(p, h)
	}
	if len(p.args) != 1 {
		return usagef("policy check takes exactly one CAPABILITY_ID")
	}
	d, err := loadDeployment(p, h, nil)
	if err != nil {
		return err
	}
	set, err := d.Authority()
	if err != nil {
		return err
	}
	req := authority.Request{Capability: authority.ID(p.args[0])}
	for _, r := range p.values["read"] {
		req.Resources = append(req.Resources, authority.Resource{Kind: authority.ResourceRead, Value: r})
	}
	for _, w := range p.values["write"] {
		req.Resources = append(req.Resources, authority.Resource{Kind: authority.ResourceWrite, Value: w})
	}
	dec := set.Decide(req)
	if p.bools["json"] {
		out, _ := json.Marshal(struct {
			Capability string `json:"capability"`
			authority.Decision
		}{p.args[0], dec})
		fmt.Fprintf(h.stdout, "%s\n", out)
	} else {
		verdict := "denied"
		if dec.Allowed {
			verdict = "allowed"
		}
		fmt.Fprintf(h.stdout, "%s %s\n  layer: %s\n  rule:  %s\n  why:   %s\n", verdict, p.args[0], dec.Layer, dec.RuleID, dec.Reason)
		for _, s := range dec.Trail {
			mark := "allow"
			if !s.Allowed {
				mark = "deny"
			}
			fmt.Fprintf(h.stdout, "    %-5s %-24s %-14s %s\n", mark, s.Layer, s.Dimension, s.RuleID)
		}
	}
	if !dec.Allowed {
		return &exitError{code: 1}
	}
	return nil
}

// shellCheck implements `pablo policy check --shell 'COMMAND'`: the literal
// command policy's verdict (parse, resolved executable, deciding layer and
// rule), without running anything.
func shellCheck(p *parsed, h *host) error {
	if len(p.args) > 0 {
		return usagef("--shell takes the command; give no CAPABILITY_ID")
	}
	d, err := loadDeployment(p, h, nil)
	if err != nil {
		return err
	}
	pol, err := d.ShellPolicy()
	if err != nil {
		return err
	}
	if pol == nil {
		msg := "no literal command policy is configured: commands run through /bin/sh -c as written"
		if p.bools["json"] {
			writeJSON(h, map[string]any{"allowed": true, "layer": "", "rule_id": "", "reason": "no_command_policy"})
		} else {
			fmt.Fprintln(h.stdout, msg)
		}
		return nil
	}
	dec := pol.Check(p.one("shell"))
	if p.bools["json"] {
		writeJSON(h, dec)
	} else {
		verdict := "denied"
		if dec.Allowed {
			verdict = "allowed"
		}
		fmt.Fprintf(h.stdout, "%s\n  layer:  %s\n  rule:   %s\n  reason: %s\n", verdict, dec.Layer, dec.RuleID, dec.Reason)
		if len(dec.Argv) > 0 {
			b, _ := json.Marshal(dec.Argv)
			fmt.Fprintf(h.stdout, "  argv:   %s\n", b)
		}
		if dec.Executable != nil {
			b, _ := json.Marshal(dec.Executable)
			fmt.Fprintf(h.stdout, "  executable: %s\n", b)
		}
	}
	if !dec.Allowed {
		return &exitError{code: 1}
	}
	return nil
}
