package config

import (
	"errors"
	"fmt"
	"strings"

	"github.com/pabloagent/pablo/internal/redact"
	"github.com/pabloagent/pablo/internal/textx"
)

// Code classifies a deployment error. The codes are the reference's.
type Code string

// The deployment error codes.
const (
	CodeSchemaVersion           Code = "config_schema_version"
	CodeUnknownOption           Code = "config_unknown_option"
	CodeUnsupportedFeature      Code = "config_unsupported_feature"
	CodeConflict                Code = "config_conflict"
	CodeInvalidValue            Code = "config_invalid_value"
	CodeLimit                   Code = "config_limit"
	CodeImportPath              Code = "config_import_path"
	CodeDuplicateImport         Code = "config_duplicate_import"
	CodeImportCycle             Code = "config_import_cycle"
	CodeInputChanged            Code = "config_input_changed"
	CodeProfileCycle            Code = "config_profile_cycle"
	CodeUnknownProfile          Code = "config_unknown_profile"
	CodeDuplicateProfileAncesor Code = "config_duplicate_profile_ancestor"
	CodeEnvironmentMissing      Code = "config_environment_missing"
	CodeEnvironmentValue        Code = "config_environment_value"
	CodeAuthorityViolation      Code = "config_authority_violation"
	CodeOverrideForbidden       Code = "config_override_forbidden"
	CodeBinding                 Code = "config_binding"
)

// ErrInvalid is the sentinel kind of every deployment error:
// errors.Is(err, config.ErrInvalid). The root re-exports it as pablo.ErrConfig.
var ErrInvalid = errors.New("pablo: invalid deployment")

// Error is one deployment diagnostic. Option is a JSON pointer into the
// deployment document ("/options/mcp/servers/records/command"), Source the
// file it came from and Line its 1-based line when known. Messages never hold
// secret values.
type Error struct {
	Code        Code   `json:"code"`
	Option      string `json:"option"`
	Source      string `json:"source,omitempty"`
	Line        int    `json:"line,omitempty"`
	AuthorityID string `json:"authority_id,omitempty"`
	// Binding names the host binding a config_binding error is about; a host
	// adds its own spelling of how to give one (the CLI's --bind NAME=DIR).
	Binding string   `json:"binding,omitempty"`
	Chain   []string `json:"chain,omitempty"`
	Message string   `json:"message"`

	// cause, when set, is what errors.Unwrap returns (fsx.ErrNotRegular,
	// a context error); it is not part of the diagnostic.
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

// Unwrap returns the cause of a file error (fsx.ErrNotRegular, a context
// error), or nil.
func (e *Error) Unwrap() error { return e.cause }

// sanitize turns control characters into '?' and bounds the length, so a
// hostile document cannot forge terminal output through a diagnostic.
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

// pointer joins JSON pointer tokens, escaping "~" and "/".
func pointer(tokens ...string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		t = strings.ReplaceAll(t, "~", "~0")
		b.WriteString(strings.ReplaceAll(t, "/", "~1"))
	}
	return b.String()
}

// shown is how a diagnostic quotes a value from the document: masked for
// the built-in credential formats first, then shortened, so a pasted token
// is never echoed in part (masking after the cut would miss a cut token).
func shown(s string, n int) string {
	var builtins redact.Set
	return textx.Shorten(builtins.String(s), n)
}

// WithCause sets what errors.Unwrap returns for e (the error a script or a
// file read failed with) and returns e.
func (e *Error) WithCause(cause error) *Error {
	e.cause = cause
	return e
}
