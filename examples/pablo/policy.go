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
	p, err := parseArgs(args[1:], withFlags(map[string]flagSpec{
		"read":  {value: true, repeat: true},
		"write": {value: true, repeat: true},
	}))
	if err != nil {
		return err
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
