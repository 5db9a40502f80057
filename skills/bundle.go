package skills

import (
	"encoding/json"
	"fmt"
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
	// CodeOutputContractIncompatible: the Skill's output contract and the
	// task's output schema disagree on the answer's JSON type.
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
		if a, b := schemaType(contract), schemaType(t.OutputSchema); a != "" && b != "" && a != b {
			add(CodeOutputContractIncompatible, fmt.Sprintf("the Skill's output contract is a JSON %s and the task's output schema a JSON %s", a, b))
		}
	}
	return out
}

// schemaType is a schema's top-level "type" when it names one type.
func schemaType(schema json.RawMessage) string {
	var v struct {
		Type any `json:"type"`
	}
	if json.Unmarshal(schema, &v) != nil {
		return ""
	}
	s, _ := v.Type.(string)
	return s
}
