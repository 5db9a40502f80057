package main

import (
	"context"
	"encoding/json"
	"strings"

	"fmt"

	"github.com/pabloagent/pablo"
)

// notCheckedOffline is what config validate leaves to the commands that may
// read credentials, start servers or use the network.
func notCheckedOffline() []string {
	return []string{
		"credential values (pablo doctor)",
		"MCP servers (pablo mcp probe)",
		"the model provider (pablo doctor --probe provider)",
	}
}

// configCommand implements `pablo config validate|explain|render`. All three
// are offline: no credential is read, nothing is started, no network is used.
func configCommand(ctx context.Context, args []string, h *host) error {
	if len(args) == 0 {
		return usagef("usage: pablo config validate|explain|render --config F [--bind NAME=DIR]...")
	}
	sub := args[0]
	switch sub {
	case "validate", "explain", "render":
	default:
		return usagef("unknown config command %q (want validate, explain or render)", sub)
	}
	p, err := parseArgs(args[1:], "config "+sub)
	if err != nil {
		return err
	}
	if len(p.args) > 0 {
		return usagef("unexpected argument %q", p.args[0])
	}
	d, err := loadDeployment(ctx, p, h, nil)
	if err != nil {
		return err
	}
	switch sub {
	case "validate":
		// Everything run would refuse offline is refused here: every path
		// object resolves against the given bindings.
		if err := d.CheckPaths(); err != nil {
			return err
		}
		if p.bools["json"] {
			writeJSON(h, struct {
				Valid       bool     `json:"valid"`
				Fingerprint string   `json:"fingerprint"`
				NotChecked  []string `json:"not_checked"`
			}{true, d.Fingerprint, notCheckedOffline()})
			return nil
		}
		fmt.Fprintf(h.stdout, "valid %s\n", d.Fingerprint)
		if note := defaultModelNote(d); note != "" {
			fmt.Fprintf(h.stdout, "  %s\n", note)
		}
		for _, n := range notCheckedOffline() {
			fmt.Fprintf(h.stdout, "  not checked offline: %s\n", n)
		}
	case "explain":
		fmt.Fprintf(h.stdout, "%s\n", d.Explain())
	case "render":
		out, err := d.Render()
		if err != nil {
			return err
		}
		h.stdout.Write(out)
	}
	return nil
}

// defaultModelNote says, when the deployment writes no options.model
// provider, which default it chose and which credential that needs (and
// where the credential is looked for): "" when the provider is written.
func defaultModelNote(d *pablo.Deployment) string {
	var ex struct {
		Provenance map[string][]struct {
			Operation string `json:"operation"`
		} `json:"provenance"`
	}
	if json.Unmarshal(d.Explain(), &ex) != nil {
		return ""
	}
	ops := ex.Provenance["/config/options/model/provider"]
	if len(ops) == 0 || ops[len(ops)-1].Operation != "default" {
		return ""
	}
	for _, m := range d.ModelProfiles() {
		if m.Option != "/options/model" {
			continue
		}
		note := fmt.Sprintf("model: no [options.model] provider is written; the default is provider %q", m.Provider)
		if m.Model != "" {
			note += fmt.Sprintf(" model %q", m.Model)
		}
		if m.Consumer == "" {
			return note
		}
		note += fmt.Sprintf(" at %s; it needs credential %q (%s)", m.Endpoint, m.Credential, m.Consumer)
		if c, ok := d.Credentials()[m.Credential]; ok {
			var where []string
			for _, src := range c.Sources {
				switch {
				case src.Name != "":
					where = append(where, "environment variable "+src.Name)
				case src.Path != "":
					where = append(where, "file "+src.Path)
				}
			}
			if len(where) > 0 {
				note += ", looked for in " + strings.Join(where, ", then ")
			}
		} else {
			note += ", which this deployment does not declare"
		}
		return note + "; write [options.model] to choose another"
	}
	return ""
}
