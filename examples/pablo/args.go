package main

import (
	"fmt"
	"strings"
)

// flagSpec says whether a flag takes a value and whether it may repeat.
type flagSpec struct {
	value  bool
	repeat bool
}

// parsed holds one command line: flags (in order) and positionals.
type parsed struct {
	values map[string][]string
	bools  map[string]bool
	args   []string
	// noConfig: the deployment is no-config mode's, and --workspace is
	// already its binding.
	noConfig bool
}

func (p *parsed) one(name string) string {
	if v := p.values[name]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// usageError is an invalid command line: exit 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// parseArgs parses a command line of the command named by path (see
// commands): flags and positionals in any order, "--name value" and
// "--name=value" forms; unknown and repeated singleton flags are refused.
// --help or -h anywhere before "--" is a *helpRequest. The parsed line is
// returned even with an error, with "json" set when --json was given, so a
// command can still answer in JSON.
func parseArgs(args []string, path string) (*parsed, error) {
	p := &parsed{values: map[string][]string{}, bools: map[string]bool{}}
	cmd, ok := lookup(path)
	if !ok {
		return p, usagef("unknown command %q", path)
	}
	specs := cmd.specs()
	_, takesJSON := specs["json"]
	sawJSON := false
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "--help" || a == "-h" {
			return p, &helpRequest{path: path}
		}
		sawJSON = sawJSON || (a == "--json" && takesJSON)
	}
	fail := func(err error) (*parsed, error) {
		p.bools["json"] = sawJSON
		return p, err
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			p.args = append(p.args, args[i+1:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			p.args = append(p.args, a)
			continue
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		s, ok := specs[name]
		if !ok {
			return fail(usagef("unknown flag --%s (see pablo %s --help)", name, path))
		}
		if !s.value {
			if hasVal {
				return fail(usagef("--%s takes no value", name))
			}
			if p.bools[name] {
				return fail(usagef("--%s is repeated", name))
			}
			p.bools[name] = true
			continue
		}
		if !hasVal {
			if i+1 >= len(args) {
				return fail(usagef("--%s needs a value", name))
			}
			i++
			val = args[i]
		}
		if len(p.values[name]) > 0 && !s.repeat {
			return fail(usagef("--%s is repeated", name))
		}
		p.values[name] = append(p.values[name], val)
	}
	return p, nil
}
