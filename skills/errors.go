package skills

import (
	"errors"
	"strings"
)

// Sentinel kinds. Every error this package returns wraps exactly one of them,
// so a caller can branch with errors.Is and still read the concrete *Error
// with errors.As.
var (
	// ErrInvalidOptions reports a caller mistake in Options or arguments
	// (a bad root ID, a relative root path, an over-long selection).
	ErrInvalidOptions = errors.New("skills: invalid options")
	// ErrLimitExceeded reports that a fixed safety limit was crossed.
	ErrLimitExceeded = errors.New("skills: limit exceeded")
	// ErrNotFound reports an unknown Skill, or a missing file.
	ErrNotFound = errors.New("skills: not found")
	// ErrAmbiguous reports a short name shared by Skills in several roots;
	// the caller must use the qualified ROOT/NAME form.
	ErrAmbiguous = errors.New("skills: ambiguous short name")
	// ErrChanged reports that a package changed after discovery: its
	// frontmatter digest or its directory identity no longer matches.
	ErrChanged = errors.New("skills: package changed since discovery")
	// ErrInvalidFrontmatter reports SKILL.md frontmatter outside the
	// portable format or outside the strict reading of YAML (see doc.go).
	ErrInvalidFrontmatter = errors.New("skills: invalid frontmatter")
	// ErrUnsafePath reports a symlink, a non-regular file or a path that
	// could leave the package.
	ErrUnsafePath = errors.New("skills: unsafe path")
	// ErrEncoding reports text that is not valid UTF-8.
	ErrEncoding = errors.New("skills: unsupported encoding")
	// ErrNotActivated reports a skill.read of a Skill that is not active.
	ErrNotActivated = errors.New("skills: skill not activated")
	// ErrInvalidArguments reports skill.read arguments outside its schema or
	// path rules: a model misselection, not a filesystem failure.
	ErrInvalidArguments = errors.New("skills: invalid arguments")
	// ErrIO reports an operating-system failure; the raw OS message is kept
	// only in the wrapped cause, never in Reason.
	ErrIO = errors.New("skills: i/o failure")
)

// Code is a stable, machine-readable reason. Codes appear in findings, in
// errors and in skill.read's skill.error payload.
type Code string

// Finding and error codes.
const (
	CodeRootUnavailable       Code = "root_unavailable"
	CodeRootSymlink           Code = "root_symlink"
	CodeRootNotDirectory      Code = "root_not_directory"
	CodeRootDenied            Code = "root_denied"
	CodePackageSymlink        Code = "package_symlink"
	CodePackageNotDirectory   Code = "package_not_directory"
	CodeMissingSkillFile      Code = "missing_skill_md"
	CodeSkillFileSymlink      Code = "skill_md_symlink"
	CodeSkillFileNotRegular   Code = "skill_md_not_regular"
	CodeMissingFrontmatter    Code = "frontmatter_missing"
	CodeUnterminated          Code = "frontmatter_unterminated"
	CodeFrontmatterTooLarge   Code = "frontmatter_too_large"
	CodeInvalidEncoding       Code = "invalid_encoding"
	CodeInvalidYAML           Code = "invalid_yaml"
	CodeUnsupportedYAML       Code = "unsupported_yaml"
	CodeDuplicateKey          Code = "duplicate_key"
	CodeUnknownKey            Code = "unknown_key"
	CodeTooManyEvents         Code = "too_many_events"
	CodeMissingField          Code = "missing_field"
	CodeInvalidName           Code = "invalid_name"
	CodeNameMismatch          Code = "name_mismatch"
	CodeInvalidDescription    Code = "invalid_description"
	CodeInvalidCompatibility  Code = "invalid_compatibility"
	CodeInvalidLicense        Code = "invalid_license"
	CodeInvalidMetadata       Code = "invalid_metadata"
	CodeInvalidAllowedTools   Code = "invalid_allowed_tools"
	CodeInvalidExtension      Code = "invalid_extension"
	CodeDuplicateName         Code = "duplicate_name"
	CodeLimitExceeded         Code = "limit_exceeded"
	CodeIOError               Code = "io_error"
	CodeNotFound              Code = "not_found"
	CodeAmbiguous             Code = "ambiguous"
	CodeChanged               Code = "changed"
	CodeInvalidSelection      Code = "invalid_selection"
	CodeNotActivated          Code = "not_activated"
	CodeInvalidArguments      Code = "invalid_arguments"
	CodeInvalidPath           Code = "invalid_path"
	CodeSymlink               Code = "symlink"
	CodeNotFile               Code = "not_file"
	CodeUnsupportedEncoding   Code = "unsupported_encoding"
	CodeTooLarge              Code = "too_large"
	CodeToolNotAdmitted       Code = "tool_not_admitted"
	CodeMCPServerMissing      Code = "mcp_server_missing"
	CodeInvalidOutputContract Code = "invalid_output_contract"
)

// Error is the concrete error type of this package.
type Error struct {
	// Kind is one of the Err* sentinels.
	Kind error
	// Code is the stable machine-readable reason.
	Code Code
	// Skill is the qualified ROOT/NAME the error concerns, if any.
	Skill string
	// Path is a package-relative path the error concerns, if any.
	Path string
	// Reason says what is wrong and what to change. It never carries a raw
	// OS message or file content.
	Reason string
	// Err is the underlying cause, if any.
	Err error
}

// Error implements error.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("skills: ")
	if e.Skill != "" {
		b.WriteString(e.Skill)
		b.WriteString(": ")
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Reason)
	return b.String()
}

// Unwrap exposes both the sentinel kind and the cause to errors.Is/As.
func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

// Finding is one diagnostic of discovery or validation. A broken package
// produces a finding and never stops the others.
type Finding struct {
	// Root is the root ID the finding belongs to.
	Root string `json:"root"`
	// Dir is the package directory name inside the root; empty for a finding
	// about the root itself.
	Dir string `json:"dir,omitempty"`
	// Code is the stable machine-readable reason.
	Code Code `json:"code"`
	// Reason says what is wrong and what to change.
	Reason string `json:"reason"`
}

// String renders the finding as "root/dir: code: reason".
func (f Finding) String() string {
	where := f.Root
	if f.Dir != "" {
		where += "/" + f.Dir
	}
	return where + ": " + string(f.Code) + ": " + f.Reason
}
