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

// parseArgs accepts flags and positionals in any order, "--name value" and
// "--name=value" forms, and rejects unknown and repeated singleton flags.
func parseArgs(args []string, specs map[string]flagSpec) (*parsed, error) {
	p := &parsed{values: map[string][]string{}, bools: map[string]bool{}}
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
			return nil, usagef("unknown flag --%s", name)
		}
		if !s.value {
			if hasVal {
				return nil, usagef("--%s takes no value", name)
			}
			if p.bools[name] {
				return nil, usagef("--%s is repeated", name)
			}
			p.bools[name] = true
			continue
		}
		if !hasVal {
			if i+1 >= len(args) {
				return nil, usagef("--%s needs a value", name)
			}
			i++
			val = args[i]
		}
		if len(p.values[name]) > 0 && !s.repeat {
			return nil, usagef("--%s is repeated", name)
		}
		p.values[name] = append(p.values[name], val)
	}
	return p, nil
}

// deploymentFlags are the bootstrap flags every configured command takes.
func deploymentFlags() map[string]flagSpec {
	return map[string]flagSpec{
		"config":        {value: true},
		"config-root":   {value: true},
		"profile":       {value: true},
		"bind":          {value: true, repeat: true},
		"locked":        {},
		"json":          {},
		"loopback-http": {},
	}
}

func withFlags(extra map[string]flagSpec) map[string]flagSpec {
	out := map[string]flagSpec{}
	for k, v := range deploymentFlags() {
		out[k] = v
	}
	for k, v := range extra {
		out[k] = v
	}
	return out
}
