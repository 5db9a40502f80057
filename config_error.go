package pablo

import (
	"errors"
	"fmt"
	"strings"

	"github.com/pabloagent/pablo/internal/redact"
	"github.com/pabloagent/pablo/internal/textx"
)

// ConfigCode classifies a deployment error. The codes are the reference's.
type ConfigCode string

// The deployment error codes.
const (
	CodeSchemaVersion           ConfigCode = "config_schema_version"
	CodeUnknownOption           ConfigCode = "config_unknown_option"
	CodeUnsupportedFeature      ConfigCode = "config_unsupported_feature"
	CodeConflict                ConfigCode = "config_conflict"
	CodeInvalidValue            ConfigCode = "config_invalid_value"
	CodeLimit                   ConfigCode = "config_limit"
	CodeImportPath              ConfigCode = "config_import_path"
	CodeDuplicateImport         ConfigCode = "config_duplicate_import"
	CodeImportCycle             ConfigCode = "config_import_cycle"
	CodeInputChanged            ConfigCode = "config_input_changed"
	CodeProfileCycle            ConfigCode = "config_profile_cycle"
	CodeUnknownProfile          ConfigCode = "config_unknown_profile"
	CodeDuplicateProfileAncesor ConfigCode = "config_duplicate_profile_ancestor"
	CodeEnvironmentMissing      ConfigCode = "config_environment_missing"
	CodeEnvironmentValue        ConfigCode = "config_environment_value"
	CodeAuthorityViolation      ConfigCode = "config_authority_violation"
	CodeOverrideForbidden       ConfigCode = "config_override_forbidden"
	CodeBinding                 ConfigCode = "config_binding"
)

// ErrConfig is the sentinel kind of every deployment error:
// errors.Is(err, pablo.ErrConfig).
var ErrConfig = errors.New("pablo: invalid deployment")

// ConfigError is one deployment diagnostic. Option is a JSON pointer into the
// deployment document ("/options/mcp/servers/records/command"), Source the
// file it came from and Line its 1-based line when known. Messages never hold
// secret values.
type ConfigError struct {
	Code        ConfigCode `json:"code"`
	Option      string     `json:"option"`
	Source      string     `json:"source,omitempty"`
	Line        int        `json:"line,omitempty"`
	AuthorityID string     `json:"authority_id,omitempty"`
	// Binding names the host binding a config_binding error is about; a host
	// adds its own spelling of how to give one (the CLI's --bind NAME=DIR).
	Binding string   `json:"binding,omitempty"`
	Chain   []string `json:"chain,omitempty"`
	Message string   `json:"message"`

	// cause, when set, is what errors.Unwrap returns (fsx.ErrNotRegular,
	// a context error); it is not part of the diagnostic.
	cause error
}

func (e *ConfigError) Error() string {
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

// Is makes errors.Is(err, ErrConfig) true.
func (e *ConfigError) Is(target error) bool { return target == ErrConfig }

// Unwrap returns the cause of a file error (fsx.ErrNotRegular, a context
// error), or nil.
func (e *ConfigError) Unwrap() error { return e.cause }

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
