package config

import (
	"strings"

	"github.com/pabloagent/pablo/deployment"

	"github.com/pabloagent/pablo/internal/redact"
	"github.com/pabloagent/pablo/internal/textx"
)

// The deployment diagnostics are the public package deployment's types,
// so that an error raised here, in the root or in the run engine is the
// one type a host matches with errors.As.
type (
	// Code classifies a deployment error. The codes are the reference's.
	Code = deployment.Code
	// Error is one deployment diagnostic.
	Error = deployment.Error
	// PathRef is a typed path: relative to the declaring file (normalized
	// to the config root), the config root, the workspace or a named
	// binding.
	PathRef = deployment.PathRef
	// PathError is a path that cannot be resolved inside its root.
	PathError = deployment.PathError
)

// The deployment error codes.
const (
	CodeSchemaVersion            = deployment.CodeSchemaVersion
	CodeUnknownOption            = deployment.CodeUnknownOption
	CodeUnsupportedFeature       = deployment.CodeUnsupportedFeature
	CodeConflict                 = deployment.CodeConflict
	CodeInvalidValue             = deployment.CodeInvalidValue
	CodeLimit                    = deployment.CodeLimit
	CodeImportPath               = deployment.CodeImportPath
	CodeDuplicateImport          = deployment.CodeDuplicateImport
	CodeImportCycle              = deployment.CodeImportCycle
	CodeInputChanged             = deployment.CodeInputChanged
	CodeProfileCycle             = deployment.CodeProfileCycle
	CodeUnknownProfile           = deployment.CodeUnknownProfile
	CodeDuplicateProfileAncestor = deployment.CodeDuplicateProfileAncestor
	CodeEnvironmentMissing       = deployment.CodeEnvironmentMissing
	CodeEnvironmentValue         = deployment.CodeEnvironmentValue
	CodeAuthorityViolation       = deployment.CodeAuthorityViolation
	CodeOverrideForbidden        = deployment.CodeOverrideForbidden
	CodeBinding                  = deployment.CodeBinding
)

// ErrInvalid is the sentinel kind of every deployment error:
// errors.Is(err, config.ErrInvalid), deployment.ErrInvalid's other name.
var ErrInvalid = deployment.ErrInvalid

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
