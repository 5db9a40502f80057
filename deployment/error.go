package deployment

import (
	"errors"
	"fmt"
	"strings"
)

// Code classifies a deployment [Error]: the reference's config_* codes, as
// the CLI's --json error documents spell them.
type Code string

// The deployment error codes. A host that refuses a deployment for a
// reason of its own (a flag that would replace a locked deployment's
// model, an option it does not serve) raises an [Error] with one of
// these, so its callers read one vocabulary.
const (
	CodeSchemaVersion            Code = "config_schema_version"
	CodeUnknownOption            Code = "config_unknown_option"
	CodeUnsupportedFeature       Code = "config_unsupported_feature"
	CodeConflict                 Code = "config_conflict"
	CodeInvalidValue             Code = "config_invalid_value"
	CodeLimit                    Code = "config_limit"
	CodeImportPath               Code = "config_import_path"
	CodeDuplicateImport          Code = "config_duplicate_import"
	CodeImportCycle              Code = "config_import_cycle"
	CodeInputChanged             Code = "config_input_changed"
	CodeProfileCycle             Code = "config_profile_cycle"
	CodeUnknownProfile           Code = "config_unknown_profile"
	CodeDuplicateProfileAncestor Code = "config_duplicate_profile_ancestor"
	CodeEnvironmentMissing       Code = "config_environment_missing"
	CodeEnvironmentValue         Code = "config_environment_value"
	CodeAuthorityViolation       Code = "config_authority_violation"
	CodeOverrideForbidden        Code = "config_override_forbidden"
	CodeBinding                  Code = "config_binding"
)

// ErrInvalid is the sentinel kind of every deployment error:
// errors.Is(err, deployment.ErrInvalid) holds for each [Error] and
// [PathError]. The root names it pablo.ErrConfig too.
var ErrInvalid = errors.New("pablo: invalid deployment")

// Error is one deployment diagnostic: a config_* [Code], the JSON pointer
// of the option ("/options/mcp/servers/records/command"), the file and
// line it came from when known, and a message that never holds a secret
// value. errors.Is(err, [ErrInvalid]) holds for every one.
type Error struct {
	Code Code `json:"code"`
	// Option is a JSON pointer into the deployment document, or the
	// host's own spelling of what it refused ("--script").
	Option string `json:"option"`
	// Source is the file the option came from and Line its 1-based line,
	// when known.
	Source string `json:"source,omitempty"`
	Line   int    `json:"line,omitempty"`
	// AuthorityID names the [[authority]] layer a violation is about.
	AuthorityID string `json:"authority_id,omitempty"`
	// Binding names the host binding a config_binding error is about; a host
	// adds its own spelling of how to give one (the CLI's --bind NAME=DIR).
	Binding string `json:"binding,omitempty"`
	// Chain is the import or profile chain of a cycle, in order.
	Chain   []string `json:"chain,omitempty"`
	Message string   `json:"message"`

	// cause, when set, is what errors.Unwrap returns (a file that is not
	// regular, a context error); it is not part of the diagnostic.
	cause error
}

// Error writes the diagnostic as code, source:line, option, binding,
// authority and chain, then the message, with control characters replaced
// and the length bounded.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(string(e.Code))
	if e.Source != "" {
		b.WriteString(" ")
		b.WriteString(e.Source)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
		}
	}
	if e.Option != "" {
		b.WriteString(" at ")
		b.WriteString(e.Option)
	}
	if e.Binding != "" {
		fmt.Fprintf(&b, " for binding %q", e.Binding)
	}
	if e.AuthorityID != "" {
		fmt.Fprintf(&b, " (authority %q)", e.AuthorityID)
	}
	if len(e.Chain) > 0 {
		fmt.Fprintf(&b, " (chain %s)", strings.Join(e.Chain, " → "))
	}
	b.WriteString(": ")
	b.WriteString(e.Message)
	return sanitize(b.String(), 1024)
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *Error) Is(target error) bool { return target == ErrInvalid }

// Unwrap returns the cause (a file that is not regular, a context error),
// or nil.
func (e *Error) Unwrap() error { return e.cause }

// WithCause sets what errors.Unwrap returns for e (the error a script or a
// file read failed with) and returns e.
func (e *Error) WithCause(cause error) *Error {
	e.cause = cause
	return e
}

// sanitize turns control characters into '?' and bounds s to max bytes
// (an ellipsis marks a cut), so a hostile document cannot forge terminal
// output through a diagnostic.
func sanitize(s string, max int) string {
	var b strings.Builder
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			r = '?'
		}
		if b.Len()+len(string(r)) > max {
			b.WriteString("…")
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}

// PathRef is a typed path object of the deployment, as
// { base = "binding", name = "mcp", path = "." } writes it: relative to the
// config root, the workspace or a named binding. A path the document wrote
// relative to its own file ("source") is normalized to the config root.
type PathRef struct {
	// Base is "config", "workspace" or "binding" ("root" in a diagnostic
	// about a path joined onto a directory the host gave).
	Base string `json:"base"`
	// Name is the binding's name when Base is "binding".
	Name string `json:"name,omitempty"`
	// Path is relative to the base.
	Path string `json:"path"`
}

// String is the path as diagnostics write it: "binding:NAME:PATH" or
// "BASE:PATH".
func (p PathRef) String() string {
	if p.Base == "binding" {
		return fmt.Sprintf("binding:%s:%s", p.Name, p.Path)
	}
	return p.Base + ":" + p.Path
}

// PathError is a path object that cannot be resolved inside its root;
// Unbound says it names a binding the host did not give.
type PathError struct {
	Ref PathRef
	// Unbound is true when Ref names a binding the host did not give.
	Unbound bool
	Reason  string
}

// Error says which path cannot be resolved and why.
func (e *PathError) Error() string { return fmt.Sprintf("path %s: %s", e.Ref, e.Reason) }

// Is makes errors.Is(err, ErrInvalid) true.
func (e *PathError) Is(target error) bool { return target == ErrInvalid }
