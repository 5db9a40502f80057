package skills

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// A Skill is a reusable capability bundle (seed 002): besides what it needs
// (Requirements), its metadata may say who owns it, which version it is,
// which task kinds and adapters it is for and which credentials it uses.
// Like every metadata key these are read through the strict frontmatter
// walk as strings, are inert, and grant nothing.
const (
	// MetadataOwner names the Skill's owner (`owner: support-team`).
	MetadataOwner = "owner"
	// MetadataVersion is the Skill's version, a semantic version
	// (`version: 1.4.0`); OpenClaw's top-level version key is read when
	// metadata has none.
	MetadataVersion = "version"
	// MetadataTaskKinds are the task kinds the Skill is for,
	// space-separated (`task-kinds: review triage`).
	MetadataTaskKinds = "task-kinds"
	// MetadataCompatibleAdapters are the agent adapters the Skill was
	// written for, space-separated (`compatible-adapters: pablo`).
	MetadataCompatibleAdapters = "compatible-adapters"
	// MetadataCredentials are the credentials the Skill's work needs, by
	// the deployment's credential names, space-separated.
	MetadataCredentials = "credentials"
)

// The bundle validation codes (ValidateBundle).
const (
	// CodeVersionUnresolved: a declared version is not a semantic version.
	CodeVersionUnresolved Code = "version_unresolved"
	// CodeCredentialMissing: a credential the Skill names is not declared.
	CodeCredentialMissing Code = "credential_missing"
	// CodeAdapterIncompatible: the Skill names its adapters and this is
	// not one of them.
	CodeAdapterIncompatible Code = "adapter_incompatible"
	// CodeTaskKindMismatch: the Skill names its task kinds and the task's
	// is not one of them.
	CodeTaskKindMismatch Code = "task_kind_mismatch"
	// CodeOutputContractIncompatible: an answer the Skill's output
	// contract admits can fail the task's output schema by its shape: a
	// JSON type that differs (at the top, in a property both declare, or
	// in an array's items), or a property the task requires that the
	// contract does not.
	CodeOutputContractIncompatible Code = "output_contract_incompatible"
)

// Adapter is the adapter name a Skill's compatible-adapters must list for
// Pablo to run it as written for it.
const Adapter = "pablo"

// Bundle is what a Skill's metadata says of it as a capability bundle.
type Bundle struct {
	Owner              string   `json:"owner,omitempty"`
	Version            string   `json:"version,omitempty"`
	TaskKinds          []string `json:"task_kinds,omitempty"`
	CompatibleAdapters []string `json:"compatible_adapters,omitempty"`
	Credentials        []string `json:"credentials,omitempty"`
}

// Bundle returns the Skill's bundle metadata.
func (s Skill) Bundle() Bundle {
	b := Bundle{Owner: s.Metadata[MetadataOwner], Version: s.Metadata[MetadataVersion],
		TaskKinds: fields(s.Metadata[MetadataTaskKinds]), CompatibleAdapters: fields(s.Metadata[MetadataCompatibleAdapters]),
		Credentials: fields(s.Metadata[MetadataCredentials])}
	if b.Version == "" {
		if raw, ok := s.Extensions["version"]; ok {
			_ = json.Unmarshal(raw, &b.Version)
		}
	}
	return b
}

// ForTaskKind reports whether the Skill is for tasks of kind: a Skill
// that names no task kinds is for every kind, and a task of no kind
// takes every Skill.
func (b Bundle) ForTaskKind(kind string) bool {
	return kind == "" || len(b.TaskKinds) == 0 || slices.Contains(b.TaskKinds, kind)
}

// fields splits a space-separated metadata value, sorted and unique.
func fields(v string) []string {
	out := strings.Fields(v)
	slices.Sort(out)
	return slices.Compact(out)
}

// semver is a semantic version (an optional leading v, a pre-release and
// build part allowed).
var semver = regexp.MustCompile(`^v?(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)

// Target is what a Skill bundle is validated against.
type Target struct {
	// Adapter is the adapter that runs it (Adapter for Pablo).
	Adapter string
	// Credential reports whether a credential name is declared; nil
	// declares none.
	Credential func(name string) bool
	// TaskKind is the task's kind; empty takes every Skill.
	TaskKind string
	// OutputSchema is the task's output schema, when it has one.
	OutputSchema json.RawMessage
}

// ValidateBundle checks a Skill as a capability bundle (seed 002's Skill
// validation, beside Validate): its version resolves (a declared one is a
// semantic version), each credential it names exists, the adapter is one
// it was written for, the task's kind is one of its task kinds, and its
// output contract is compatible with the task's output schema (the same
// JSON type for the answer). Findings carry the Skill's root and name;
// none changes what the task may do.
func ValidateBundle(s Skill, t Target) []Finding {
	var out []Finding
	add := func(code Code, reason string) {
		out = append(out, Finding{Root: s.Root, Dir: s.Name, Code: code, Reason: reason})
	}
	b := s.Bundle()
	if b.Version != "" && !semver.MatchString(b.Version) {
		add(CodeVersionUnresolved, fmt.Sprintf("version %s does not resolve: write a semantic version such as 1.2.0", strconv.Quote(b.Version)))
	}
	for _, c := range b.Credentials {
		if t.Credential == nil || !t.Credential(c) {
			add(CodeCredentialMissing, fmt.Sprintf("the Skill needs credential %s, which the deployment does not declare", strconv.Quote(c)))
		}
	}
	if len(b.CompatibleAdapters) > 0 && !slices.Contains(b.CompatibleAdapters, t.Adapter) {
		add(CodeAdapterIncompatible, fmt.Sprintf("the Skill is written for %s, not %s", strings.Join(b.CompatibleAdapters, ", "), strconv.Quote(t.Adapter)))
	}
	if !b.ForTaskKind(t.TaskKind) {
		add(CodeTaskKindMismatch, fmt.Sprintf("the Skill is for task kinds %s, not %s", strings.Join(b.TaskKinds, ", "), strconv.Quote(t.TaskKind)))
	}
	if contract := s.Requirements().OutputSchema; contract != nil && t.OutputSchema != nil {
		var c, k map[string]any
		if json.Unmarshal(contract, &c) == nil && json.Unmarshal(t.OutputSchema, &k) == nil {
			if why := shapeConflict(c, k, "", 0); why != "" {
				add(CodeOutputContractIncompatible, "the Skill's output contract "+why)
			}
		}
	}
	return out
}

// maxShapeDepth bounds how deep shapeConflict compares two schemas.
const maxShapeDepth = 32

// shapeConflict says how an answer the contract admits can fail the
// task's schema by its shape, or "" when the two agree as far as their
// types and required properties tell: the JSON types differ (each naming
// one), the task requires a property the contract does not, or a property
// both declare, or the items of arrays both are, conflict in turn. What
// the two schemas do not both say (formats, bounds, patterns) is not
// compared: the output check decides that on the answer itself.
func shapeConflict(contract, task map[string]any, at string, depth int) string {
	if depth > maxShapeDepth {
		return ""
	}
	where := "the answer"
	if at != "" {
		where = strconv.Quote(at)
	}
	a, b := schemaType(contract), schemaType(task)
	if a != "" && b != "" && a != b && (a != "integer" || b != "number") {
		return fmt.Sprintf("makes %s a JSON %s and the task's output schema a JSON %s", where, a, b)
	}
	switch {
	case a == "object" && b == "object":
		cprops, _ := contract["properties"].(map[string]any)
		tprops, _ := task["properties"].(map[string]any)
		creq := sortedStrings(contract["required"])
		for _, name := range sortedStrings(task["required"]) {
			if !slices.Contains(creq, name) {
				return fmt.Sprintf("does not require %s, which the task's output schema requires", strconv.Quote(join(at, name)))
			}
		}
		for _, name := range slices.Sorted(maps.Keys(tprops)) {
			cp, _ := cprops[name].(map[string]any)
			tp, _ := tprops[name].(map[string]any)
			if cp == nil || tp == nil {
				continue
			}
			if why := shapeConflict(cp, tp, join(at, name), depth+1); why != "" {
				return why
			}
		}
	case a == "array" && b == "array":
		ci, _ := contract["items"].(map[string]any)
		ti, _ := task["items"].(map[string]any)
		if ci != nil && ti != nil {
			return shapeConflict(ci, ti, at+"[]", depth+1)
		}
	}
	return ""
}

// schemaType is a schema's "type" when it names one type.
func schemaType(schema map[string]any) string {
	s, _ := schema["type"].(string)
	return s
}

// join is the path of property name under at.
func join(at, name string) string {
	if at == "" {
		return name
	}
	return at + "." + name
}

// sortedStrings is a JSON array's strings, sorted.
func sortedStrings(v any) []string {
	list, _ := v.([]any)
	out := make([]string, 0, len(list))
	for _, e := range list {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}
