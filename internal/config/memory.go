package config

import (
	"fmt"
	"slices"
	"strings"
)

// MemoryOptions are options.memory, a Go extension for seed 002's memory
// tools: a git repository (a binding, read with go-git at a commit, never
// its work tree), the ref a task pins, the directories of records and
// docs, the ontology, and one grant per tool. Absent, no memory tool
// exists.
type MemoryOptions struct {
	Repository *PathRef `json:"repository,omitempty"`
	// Ref is resolved to a commit when a task starts: the pin.
	Ref        string   `json:"ref,omitempty"`
	GraphPaths []string `json:"graph_paths,omitempty"`
	DocsPaths  []string `json:"docs_paths,omitempty"`
	Ontology   *PathRef `json:"ontology,omitempty"`
	// Grants maps a grant name (MemoryGrants) to what it allows; a
	// tool whose grant is absent is not offered.
	Grants map[string]MemoryGrant `json:"grants,omitempty"`
}

// Configured reports whether options.memory names a repository.
func (m MemoryOptions) Configured() bool { return m.Repository != nil }

// MemoryGrant is one memory tool's grant: the record kinds and repository
// paths it reaches ("*" for all; an empty list reaches nothing).
type MemoryGrant struct {
	Kinds []string `json:"kinds,omitempty"`
	Paths []string `json:"paths,omitempty"`
	// Refresh, on the diff grant only, lets memory.snapshot.diff read
	// another ref than the pin without an approval.
	Refresh bool `json:"refresh,omitempty"`
}

// MemoryGrants lists the grants of options.memory.grants, each with the
// tool it admits, in a fixed order.
func MemoryGrants() [][2]string {
	return [][2]string{
		{"query", "memory.graph.search"},
		{"read", "memory.record.read"},
		{"grep", "memory.docs.grep"},
		{"diff", "memory.snapshot.diff"},
		{"propose_update", "memory.update.propose"},
		{"validation", "memory.ontology.validate"},
	}
}

// The memory section's patterns, matched by hand as pattern.go's are.
var (
	memoryRefRE  = pattern{`^(HEAD|refs/[A-Za-z0-9._/-]+|[0-9a-f]{40})$`, matchMemoryRef}
	memoryKindRE = pattern{`^(\*|[A-Za-z0-9][A-Za-z0-9_.-]{0,127})$`, matchMemoryKind}
)

func matchMemoryRef(s string) bool {
	if s == "HEAD" {
		return true
	}
	if rest, ok := strings.CutPrefix(s, "refs/"); ok {
		return classes(rest, 1, len(rest), isRefByte, isRefByte)
	}
	return classes(s, 40, 40, isLowerHex, isLowerHex)
}

func matchMemoryKind(s string) bool {
	return s == "*" || classes(s, 1, 128, isAlnum, isIdentByte)
}

func isRefByte(c byte) bool  { return isIdentByte(c) || c == '/' }
func isLowerHex(c byte) bool { return isDigit(c) || 'a' <= c && c <= 'f' }
func isAlnum(c byte) bool    { return isAlpha(c) || isDigit(c) }

func memorySpec() *spec {
	grant := table(
		"kinds", list(64, str(1, 128, nil).with(memoryKind), nil),
		"paths", list(64, str(1, 256, nil).with(memoryGrantPath), nil),
		"refresh", boolean(nil),
	)
	return table(
		"repository", pathSpec(nil),
		"ref", str(1, 256, nil).with(memoryRef),
		"graph_paths", list(16, str(1, 256, nil).with(memoryDir), nil),
		"docs_paths", list(16, str(1, 256, nil).with(memoryDir), nil),
		"ontology", pathSpec(nil),
		"grants", mapOf(int64(len(MemoryGrants())), memoryGrantKey, grant),
	).with(memoryTable).need("repository", "ref").atom()
}

func memoryGrantKey(k string) error {
	var names []string
	for _, g := range MemoryGrants() {
		if g[0] == k {
			return nil
		}
		names = append(names, g[0])
	}
	slices.Sort(names)
	return fmt.Errorf("memory grant %q is not one of %s", k, strings.Join(names, ", "))
}

func memoryRef(v any) error {
	if s, _ := v.(string); !memoryRefRE.MatchString(s) || strings.Contains(s, "..") {
		return fmt.Errorf("ref %q must be a full ref name (refs/heads/main), HEAD or a 40-hex commit ID", s)
	}
	return nil
}

func memoryKind(v any) error {
	if s, _ := v.(string); !memoryKindRE.MatchString(s) {
		return fmt.Errorf("kind %q must be \"*\" or a name of letters, digits, _, . and -", s)
	}
	return nil
}

// memoryDir checks a repository directory: relative, slash-separated, no
// "..", "." for the whole tree.
func memoryDir(v any) error {
	s, _ := v.(string)
	if strings.HasPrefix(s, "/") || strings.Contains(s, "\\") {
		return fmt.Errorf("%q must be a relative slash-separated path inside the memory repository", s)
	}
	if slices.Contains(strings.Split(s, "/"), "..") {
		return fmt.Errorf("%q must not contain a \"..\" segment", s)
	}
	return nil
}

func memoryGrantPath(v any) error {
	if v == "*" {
		return nil
	}
	return memoryDir(v)
}

// memoryTable holds the rules between options.memory's own keys: refresh
// belongs to the diff grant alone, and the repository is a binding.
func memoryTable(v any) error {
	m, _ := v.(map[string]any)
	if r, ok := m["repository"].(map[string]any); ok && r["base"] != "binding" {
		return fmt.Errorf("repository must be a binding ({ base = \"binding\", name = \"memory\", path = \".\" }), got base %q", r["base"])
	}
	grants, _ := m["grants"].(map[string]any)
	if _, ok := grants["validation"]; ok && m["ontology"] == nil {
		return fmt.Errorf("grants.validation needs an ontology to validate against")
	}
	for name, g := range grants {
		gm, _ := g.(map[string]any)
		if gm["refresh"] == true && name != "diff" {
			return fmt.Errorf("grants.%s: refresh belongs to the diff grant only", name)
		}
	}
	return nil
}

// MemoryRepository resolves options.memory.repository to a directory.
func (d *Deployment) MemoryRepository() (string, error) {
	if d.Options.Memory.Repository == nil {
		return "", fmt.Errorf("options.memory.repository is not configured")
	}
	return d.resolveDir(*d.Options.Memory.Repository, "")
}

// MemoryOntology resolves options.memory.ontology to a file path.
func (d *Deployment) MemoryOntology() (string, error) {
	if d.Options.Memory.Ontology == nil {
		return "", fmt.Errorf("options.memory.ontology is not configured")
	}
	return d.ResolvePath(*d.Options.Memory.Ontology)
}
