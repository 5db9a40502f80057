package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/skills"
)

// skillsCommand implements `pablo skills list` and `pablo skills show
// ROOT/NAME`: discovery over the deployment's configured roots only, reading
// frontmatter, never bodies. Exit 1 when packages are invalid, 2 for setup
// and lookup failures.
func skillsCommand(ctx context.Context, args []string, h *host) error {
	if len(args) == 0 || (args[0] != "list" && args[0] != "show") {
		return usagef("usage: pablo skills list|show [ROOT/NAME] --config F --bind NAME=DIR... [--json]")
	}
	sub := args[0]
	p, err := parseArgs(args[1:], "skills "+args[0])
	if err != nil {
		return err
	}
	if (sub == "list" && len(p.args) != 0) || (sub == "show" && len(p.args) != 1) {
		return usagef("usage: pablo skills list | pablo skills show ROOT/NAME")
	}
	d, err := loadDeployment(ctx, p, h, nil)
	if err != nil {
		return err
	}
	opts, err := d.SkillOptions()
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	cat, err := skills.Discover(ctx, opts)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	set, err := d.Authority()
	if err != nil {
		return err
	}
	admitted := func(id string) bool { return set.Decide(authority.Request{Capability: authority.ID(id)}).Allowed }
	configured := d.Options().MCP.Servers
	servers := func(name string) bool { _, ok := configured[name]; return ok }
	if sub == "show" {
		s, err := cat.Lookup(p.args[0])
		if err != nil {
			return &exitError{code: 2, err: err}
		}
		findings := skills.Validate(s, admitted, servers)
		if p.bools["json"] {
			writeJSON(h, struct {
				skills.Skill
				Requirements skills.Requirements `json:"requirements"`
				Validation   []skills.Finding    `json:"validation"`
			}{s, s.Requirements(), nonNil(findings)})
			return nil
		}
		fmt.Fprintf(h.stdout, "%s\n  %s\n  path:     %s\n  metadata: sha256:%s\n", s.QualifiedName, s.Description, s.RelativePath, s.MetadataSHA256)
		if src := s.Source; src != nil {
			fmt.Fprintf(h.stdout, "  source:   %s %s", src.Format, src.Locator)
			if src.Ref != "" {
				fmt.Fprintf(h.stdout, " at %s (commit %s)", src.Ref, src.Commit)
			}
			if src.Digest != "" {
				fmt.Fprintf(h.stdout, ", %s", src.Digest)
			}
			fmt.Fprintln(h.stdout)
		}
		if len(s.AllowedTools) > 0 {
			fmt.Fprintf(h.stdout, "  allowed-tools (requirements only, grant nothing): %s\n", s.AllowedTools)
		}
		if len(s.Extensions) > 0 {
			fmt.Fprintf(h.stdout, "  extensions (descriptive only, grant nothing):\n")
			for _, k := range slices.Sorted(maps.Keys(s.Extensions)) {
				fmt.Fprintf(h.stdout, "    %s: %s\n", k, s.Extensions[k])
			}
		}
		for _, f := range findings {
			fmt.Fprintf(h.stdout, "  ! %s\n", f)
		}
		return nil
	}
	if p.bools["json"] {
		b, _ := json.Marshal(cat)
		h.stdout.Write(append(b, '\n'))
	} else {
		tw := tabwriter.NewWriter(h.stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "SKILL\tDESCRIPTION")
		for _, s := range cat.Skills() {
			fmt.Fprintf(tw, "%s\t%s\n", s.QualifiedName, truncate(s.Description, 80))
		}
		tw.Flush()
		for _, f := range cat.Findings() {
			fmt.Fprintf(h.stderr, "invalid: %s\n", f)
		}
	}
	if len(cat.Findings()) > 0 {
		return &exitError{code: 1}
	}
	return nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
