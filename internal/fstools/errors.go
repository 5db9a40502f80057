package fstools

import (
	"errors"
	"fmt"

	"github.com/pabloagent/pablo/authority"
)

// Code is a recoverable filesystem error code, reported to the model. A Code
// is itself an error so that errors.Is(err, fstools.Conflict) works.
type Code string

// The recoverable error codes: the reference's, and artifact_changed.
const (
	NotFound            Code = "not_found"
	NotFile             Code = "not_file"
	NotDirectory        Code = "not_directory"
	UnsupportedEncoding Code = "unsupported_encoding"
	InvalidRange        Code = "invalid_range"
	Conflict            Code = "conflict"
	MatchNotUnique      Code = "match_not_unique"
	IOError             Code = "io_error"
	// ArtifactChanged is Pablo's own: a read of a file the agent was
	// handed (a [Pin]) found bytes of another revision than the handed
	// one, and returned none of them.
	ArtifactChanged Code = "artifact_changed"
)

// Error returns the code with the package prefix.
func (c Code) Error() string { return "fstools: " + string(c) }

// Error is a recoverable filesystem failure. Its message names the tool, the
// workspace-relative path and what to change; it never contains raw
// operating-system messages or file contents.
type Error struct {
	Tool authority.ID
	Code Code
	// Path is the workspace-relative path concerned, or the path argument
	// as given when it could not be made relative.
	Path string
	// Detail says what happened and what to do, in words meant for the
	// model.
	Detail string
	// Handed and Current are set on ArtifactChanged only: the revision
	// the file was handed at and the revision of the bytes read now.
	Handed, Current string
	cause           error
}

// Error says what failed and what to change.
func (e *Error) Error() string {
	return fmt.Sprintf("%s %q: %s: %s", e.Tool, e.Path, string(e.Code), e.Detail)
}

// Is makes errors.Is(err, e.Code) and errors.Is(err, ErrRecoverable) true.
func (e *Error) Is(target error) bool {
	return target == ErrRecoverable || target == e.Code
}

// Unwrap returns the underlying operating-system error, if any, for host-side
// diagnostics. It is never part of the message.
func (e *Error) Unwrap() error { return e.cause }

// LimitKind names the hard limit a LimitError exceeded. It is itself an
// error so that errors.Is(err, fstools.FilesystemWork) works.
type LimitKind string

// The limit kinds.
const (
	// FilesystemWork: a file, entry, depth or scan limit
	// (limits.filesystem.*).
	FilesystemWork LimitKind = "filesystem_work"
	// ToolOutputBytes: the serialized result is larger than
	// max_tool_output_bytes or the call's max_output_bytes.
	ToolOutputBytes LimitKind = "tool_output_bytes"
)

// Error returns the kind with the package prefix.
func (k LimitKind) Error() string { return "fstools: limit " + string(k) }

// LimitError is a hard work or output limit. It is terminal for the run.
type LimitError struct {
	Tool authority.ID
	Kind LimitKind
	// Limit is the name of the exceeded setting, e.g.
	// "limits.filesystem.max_file_bytes".
	Limit string
	// Max is the configured bound.
	Max int64
}

// Error says what failed and what to change.
func (e *LimitError) Error() string {
	return fmt.Sprintf("%s: limit_exceeded (%s): %s = %d exceeded; raise the limit or narrow the request", e.Tool, string(e.Kind), e.Limit, e.Max)
}

// Is makes errors.Is(err, e.Kind) and errors.Is(err, ErrLimit) true.
func (e *LimitError) Is(target error) bool { return target == ErrLimit || target == e.Kind }

// DeniedError is a policy denial of one path. It unwraps to an
// *authority.DeniedError, so errors.Is(err, authority.ErrDenied) holds and
// errors.As can reach the authority form.
type DeniedError struct {
	Tool     authority.ID
	Path     string
	Decision authority.Decision
}

// Error says what failed and what to change.
func (e *DeniedError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("%s: denied by layer %q rule %q: %s", e.Tool, e.Decision.Layer, e.Decision.RuleID, e.Decision.Reason)
	}
	return fmt.Sprintf("%s %q: denied by layer %q rule %q: %s", e.Tool, e.Path, e.Decision.Layer, e.Decision.RuleID, e.Decision.Reason)
}

// Unwrap returns the authority form of the denial.
func (e *DeniedError) Unwrap() error { return &authority.DeniedError{Decision: e.Decision} }

// ArgumentError reports malformed tool arguments: an unknown field, a wrong
// type, a missing required field or a value out of range.
type ArgumentError struct {
	Tool   authority.ID
	Field  string
	Reason string
}

// Error says what failed and what to change.
func (e *ArgumentError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%s: invalid arguments: %s", e.Tool, e.Reason)
	}
	return fmt.Sprintf("%s: invalid argument %q: %s", e.Tool, e.Field, e.Reason)
}

// Is makes errors.Is(err, ErrInvalidArguments) true.
func (e *ArgumentError) Is(target error) bool { return target == ErrInvalidArguments }

// CleanupError reports that a mutation committed but removing its temporary
// file failed. The Result is the committed result (committed:true).
type CleanupError struct {
	Tool   authority.ID
	Result *WriteResult
	cause  error
}

// Error says what failed and what to change.
func (e *CleanupError) Error() string {
	return fmt.Sprintf("%s %q: committed, but the temporary file could not be removed", e.Tool, e.Result.Path)
}

// Is makes errors.Is(err, ErrCleanup) true.
func (e *CleanupError) Is(target error) bool { return target == ErrCleanup }

// Unwrap returns the operating-system cause.
func (e *CleanupError) Unwrap() error { return e.cause }

// Sentinel kinds, usable with errors.Is.
var (
	// ErrRecoverable matches every *Error.
	ErrRecoverable = errors.New("fstools: recoverable filesystem error")
	// ErrLimit matches every *LimitError.
	ErrLimit = errors.New("fstools: limit exceeded")
	// ErrInvalidArguments matches every *ArgumentError.
	ErrInvalidArguments = errors.New("fstools: invalid arguments")
	// ErrCleanup matches a *CleanupError (committed, cleanup failed).
	ErrCleanup = errors.New("fstools: cleanup failed after commit")
)

// LayerWorkspace is the layer named by the built-in workspace confinement
// denials (rules builtin.workspace and builtin.symlink).
const LayerWorkspace = "workspace"

func builtinDenial(rule, reason string) authority.Decision {
	return authority.Decision{Allowed: false, Layer: LayerWorkspace, RuleID: rule, Reason: reason}
}
