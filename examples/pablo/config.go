package main

import (
	"context"
	"fmt"
)

// configCommand implements `pablo config validate|explain|render`. All three
// are offline: no credential is read, nothing is started, no network is used.
func configCommand(_ context.Context, args []string, h *host) error {
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
	d, err := loadDeployment(p, h, nil)
	if err != nil {
		return err
	}
	switch sub {
	case "validate":
		if p.bools["json"] {
			fmt.Fprintf(h.stdout, "{\"valid\":true,\"fingerprint\":%q}\n", d.Fingerprint)
			return nil
		}
		fmt.Fprintf(h.stdout, "valid %s\n", d.Fingerprint)
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
