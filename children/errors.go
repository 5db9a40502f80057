package children

import (
	"errors"
	"fmt"

	"github.com/pabloagent/pablo/authority"
)

// Code is the code of a refused subagent request: the code of the tool's
// recoverable {action: "error", code} result, and of an [*Error].
type Code string

// The codes. The argument codes say what in the arguments to change; the
// others name the rule that refused the request.
const (
	// CodeUnknownAction: action is not one of the offered actions.
	CodeUnknownAction Code = "unknown_action"
	// CodeInvalidJSON: the arguments are not one JSON object.
	CodeInvalidJSON Code = "invalid_json"
	// CodeUnknownField: a field the schema does not have.
	CodeUnknownField Code = "unknown_field"
	// CodeMissingField: a required field is absent.
	CodeMissingField Code = "missing_field"
	// CodeWrongType: a field of the wrong JSON type.
	CodeWrongType Code = "wrong_type"
	// CodeOutOfRange: a field past one of its bounds (length, count, range,
	// enum, format).
	CodeOutOfRange Code = "out_of_range"
	// CodeDuplicateAgentID: wait names an agent twice.
	CodeDuplicateAgentID Code = "duplicate_agent_id"
	// CodeInvalidOutputSchema: output_schema is outside the bounded subset.
	CodeInvalidOutputSchema Code = "invalid_output_schema"
	// CodeNotInherited: a capability the parent does not have.
	CodeNotInherited Code = "capability_not_inherited"
	// CodeModelRouteOrder: a model route that is not an ordered exact
	// subsequence of the parent's.
	CodeModelRouteOrder Code = "model_route_order"
	// CodeAdmission: no capacity is left (active, total, queue, input
	// bytes), the root deadline passed or the tree is closed.
	CodeAdmission Code = "child_admission"
	// CodeUnknownAgent: no child of this root has the agent ID.
	CodeUnknownAgent Code = "unknown_agent"
	// CodeUnknownResult: no settled child of this root has the result ID.
	CodeUnknownResult Code = "unknown_result"
	// CodeForeignAgent: the result belongs to another agent than the
	// handoff's source_agent_id.
	CodeForeignAgent Code = "foreign_agent"
	// CodeHandoffRefused: the result cannot be handed off (the child did
	// not complete, its output is oversized, not schema-valid or was never
	// validated, or it names no artifact).
	CodeHandoffRefused Code = "handoff_refused"
	// CodeStaleArtifact: an artifact handoff's file changed, is gone, or is
	// no longer readable under the child's authority.
	CodeStaleArtifact Code = "stale_artifact"
	// CodeRemoteUnavailable: spawn_remote without a remote runner.
	CodeRemoteUnavailable Code = "remote_unavailable"
)

// Sentinels for errors.Is on an [*Error].
var (
	// ErrArguments matches every argument code (unknown action, invalid
	// JSON, unknown or missing field, wrong type, out of range, duplicate
	// agent ID, invalid output schema).
	ErrArguments = errors.New("children: invalid subagent arguments")
	// ErrAdmission matches child_admission.
	ErrAdmission = errors.New("children: child admission refused")
	// ErrWiden matches capability_not_inherited and model_route_order; an
	// *Error of those codes also matches authority.ErrWiden.
	ErrWiden = errors.New("children: a child cannot have more than its parent")
	// ErrUnknownAgent matches unknown_agent.
	ErrUnknownAgent = errors.New("children: no such child")
	// ErrHandoff matches every handoff code (unknown result, foreign agent,
	// refused, stale artifact).
	ErrHandoff = errors.New("children: handoff refused")
	// ErrStaleArtifact matches stale_artifact.
	ErrStaleArtifact = errors.New("children: artifact changed")
	// ErrRemoteUnavailable matches remote_unavailable.
	ErrRemoteUnavailable = errors.New("children: no remote runner")
)

// Error is a refused subagent request: its code, the argument or field it
// concerns (a JSON pointer into the arguments, or a capability), and what
// to change. It never holds an argument's value beyond a short name.
type Error struct {
	Code   Code
	Field  string
	Reason string
	// Err is the cause, if any (a schema compile error, a verifier's error).
	Err error
}

func (e *Error) Error() string {
	s := "subagent: " + string(e.Code)
	if e.Field != "" {
		s += fmt.Sprintf(" at %q", e.Field)
	}
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	return s
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is matches the sentinel of the code's family.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrArguments:
		switch e.Code {
		case CodeUnknownAction, CodeInvalidJSON, CodeUnknownField, CodeMissingField, CodeWrongType,
			CodeOutOfRange, CodeDuplicateAgentID, CodeInvalidOutputSchema:
			return true
		}
	case ErrAdmission:
		return e.Code == CodeAdmission
	case ErrWiden, authority.ErrWiden:
		return e.Code == CodeNotInherited || e.Code == CodeModelRouteOrder
	case ErrUnknownAgent:
		return e.Code == CodeUnknownAgent
	case ErrHandoff:
		switch e.Code {
		case CodeUnknownResult, CodeForeignAgent, CodeHandoffRefused, CodeStaleArtifact:
			return true
		}
	case ErrStaleArtifact:
		return e.Code == CodeStaleArtifact
	case ErrRemoteUnavailable:
		return e.Code == CodeRemoteUnavailable
	}
	return false
}

func errorf(code Code, field, format string, args ...any) *Error {
	return &Error{Code: code, Field: field, Reason: fmt.Sprintf(format, args...)}
}
