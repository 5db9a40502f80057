package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// policyList is one rule list of a stack's resolved configuration: an
// object with a default and allow and deny rules (shell commands, read
// and write roots, tools, MCP servers and tools), where it stands.
type policyList struct {
	// Layer is "options" or the [[authority]] layer's ID; Path is the
	// list's place in it ("shell/commands", "policy/write_roots").
	Layer, Path string
	Default     string
	Rules       []policyRule
}

// policyRule is one allow or deny rule, with the ID the deciding layer
// and rule of every decision name.
type policyRule struct {
	Effect, ID, Value, Approval string
}

// toolProfile is what the Tools page shows of a stack besides its graph
// nodes: its native tools, sandbox and network scope, approval policy by
// tool class, and every rule list, read from the resolved configuration
// `pablo config explain` prints.
type toolProfile struct {
	// Native are the native tool switches ("filesystem": "enabled,
	// read-only").
	Native [][2]string
	// Approvals are options.approvals: tool class to requirement.
	Approvals [][2]string
	Lists     []policyList
	// Error says why the configuration could not be read.
	Error string
}

// Profile reads the stack's tool profile from its resolved configuration.
func (s *inspectStack) Profile() toolProfile {
	var doc struct {
		Config struct {
			Options   map[string]any   `json:"options"`
			Authority []map[string]any `json:"authority"`
		} `json:"config"`
	}
	if err := json.Unmarshal(s.d.Explain(), &doc); err != nil {
		return toolProfile{Error: "read the resolved configuration: " + err.Error()}
	}
	var p toolProfile
	o := doc.Config.Options
	if fs, ok := o["filesystem"].(map[string]any); ok {
		v := onOff(fs["enabled"])
		if fs["enabled"] == true {
			v += map[bool]string{true: ", writes", false: ", read-only"}[fs["write"] == true]
			if sc, ok := fs["scope"].(string); ok {
				v += ", scope " + sc
			}
		}
		p.Native = append(p.Native, [2]string{"filesystem (fs.*)", v})
	}
	if sh, ok := o["shell"].(map[string]any); ok {
		v := onOff(sh["enabled"])
		if sb, ok := sh["sandbox"].(map[string]any); ok && sh["enabled"] == true {
			v += fmt.Sprintf(", sandbox %v: filesystem %v, network %v", sb["mode"], sb["filesystem"], sb["network"])
		}
		p.Native = append(p.Native, [2]string{"shell (shell.run)", v})
	}
	if ap, ok := o["approvals"].(map[string]any); ok {
		for _, k := range sortedKeysOf(ap) {
			p.Approvals = append(p.Approvals, [2]string{k, fmt.Sprint(ap[k])})
		}
	}
	collectLists(&p.Lists, "options", "", o)
	for i, layer := range doc.Config.Authority {
		id, _ := layer["id"].(string)
		if id == "" {
			id = fmt.Sprintf("authority %d", i)
		}
		collectLists(&p.Lists, id, "", layer)
	}
	return p
}

// collectLists appends every rule list under v, depth first in key order.
func collectLists(out *[]policyList, layer, path string, v any) {
	switch v := v.(type) {
	case map[string]any:
		_, hasAllow := v["allow"].([]any)
		_, hasDeny := v["deny"].([]any)
		def, hasDefault := v["default"].(string)
		if hasAllow || hasDeny || (hasDefault && (def == "allow" || def == "deny")) {
			l := policyList{Layer: layer, Path: path, Default: def}
			for _, effect := range []string{"allow", "deny"} {
				rules, _ := v[effect].([]any)
				for _, r := range rules {
					if m, ok := r.(map[string]any); ok {
						l.Rules = append(l.Rules, ruleOf(effect, m))
					}
				}
			}
			*out = append(*out, l)
			return
		}
		for _, k := range sortedKeysOf(v) {
			collectLists(out, layer, strings.TrimPrefix(path+"/"+k, "/"), v[k])
		}
	case []any:
		for i, e := range v {
			collectLists(out, layer, fmt.Sprintf("%s/%d", path, i), e)
		}
	}
}

// ruleOf is one rule: its ID, what it matches (a value, or an executable
// with its arguments and match mode) and whether it asks for approval.
func ruleOf(effect string, m map[string]any) policyRule {
	r := policyRule{Effect: effect}
	r.ID, _ = m["id"].(string)
	r.Approval, _ = m["approval"].(string)
	if exe, ok := m["executable"].(string); ok {
		r.Value = exe
		if args, ok := m["args"].([]any); ok {
			for _, a := range args {
				r.Value += " " + fmt.Sprint(a)
			}
		}
		if match, ok := m["match"].(string); ok {
			r.Value += " (" + match + ")"
		}
		return r
	}
	if v, ok := m["value"]; ok {
		r.Value = fmt.Sprint(v)
		return r
	}
	var rest []string
	for _, k := range sortedKeysOf(m) {
		if k != "id" && k != "approval" {
			rest = append(rest, fmt.Sprintf("%s=%v", k, m[k]))
		}
	}
	r.Value = strings.Join(rest, " ")
	return r
}

func onOff(v any) string {
	if v == true {
		return "enabled"
	}
	return "disabled"
}

func sortedKeysOf(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// toolUse is one tool node across the stacks: its readiness in each
// stack, "" where the stack has no such tool.
type toolUse struct {
	ID     string
	States []string
}

// toolUses lists every node of the given kinds in any stack with its
// readiness in each, in the order the stacks first name them.
func toolUses(stacks []*inspectStack, kinds ...string) []toolUse {
	var out []toolUse
	index := map[string]int{}
	for i, s := range stacks {
		for _, n := range s.Graph.Nodes {
			if !slices.Contains(kinds, n.Kind) {
				continue
			}
			j, ok := index[n.ID]
			if !ok {
				j = len(out)
				index[n.ID] = j
				out = append(out, toolUse{ID: n.ID, States: make([]string, len(stacks))})
			}
			out[j].States[i] = string(n.State)
		}
	}
	return out
}
