package memory

import (
	"errors"
	"fmt"
)

// Sentinel kinds. Every error this package returns wraps exactly one of
// them, so a caller can branch with errors.Is and still read the concrete
// *Error with errors.As.
var (
	// ErrRepository reports a memory repository that cannot be opened or
	// read: not a git repository, a missing or corrupt object.
	ErrRepository = errors.New("memory: repository unavailable")
	// ErrRef reports a ref that does not exist or does not name a commit.
	ErrRef = errors.New("memory: ref not found")
	// ErrNotFound reports a record or document that does not exist at the
	// commit, or that lies outside the caller's scope: the two are
	// indistinguishable on purpose.
	ErrNotFound = errors.New("memory: not found")
	// ErrUnsafeEntry reports a tree entry that is not a regular file: a
	// symlink, a submodule.
	ErrUnsafeEntry = errors.New("memory: unsafe tree entry")
	// ErrLimitExceeded reports a fixed bound crossed: a blob, a tree's
	// depth or entries, a frontmatter's size, nodes or depth.
	ErrLimitExceeded = errors.New("memory: limit exceeded")
	// ErrInvalidRecord reports a record whose frontmatter is outside the
	// strict reading of YAML (see doc.go) or misses a required field.
	ErrInvalidRecord = errors.New("memory: invalid record")
	// ErrInvalidArguments reports a query, pattern, path or proposal the
	// caller must change.
	ErrInvalidArguments = errors.New("memory: invalid arguments")
	// ErrInvalidOntology reports an ontology file that does not load.
	ErrInvalidOntology = errors.New("memory: invalid ontology")
)

// Code is a stable, machine-readable reason carried by *Error.
type Code string

// Error codes.
const (
	CodeNotRepository      Code = "not_repository"
	CodeObjectUnreadable   Code = "object_unreadable"
	CodeRefNotFound        Code = "ref_not_found"
	CodeRefNotCommit       Code = "ref_not_commit"
	CodeNotFound           Code = "not_found"
	CodeSymlink            Code = "symlink"
	CodeSubmodule          Code = "submodule"
	CodeBlobTooLarge       Code = "blob_too_large"
	CodeTreeTooDeep        Code = "tree_too_deep"
	CodeTooManyEntries     Code = "too_many_entries"
	CodeFrontmatterSize    Code = "frontmatter_too_large"
	CodeFrontmatterDepth   Code = "frontmatter_too_deep"
	CodeFrontmatterNodes   Code = "frontmatter_too_many_nodes"
	CodeMissingFrontmatter Code = "frontmatter_missing"
	CodeUnterminated       Code = "frontmatter_unterminated"
	CodeInvalidYAML        Code = "invalid_yaml"
	CodeDuplicateKey       Code = "duplicate_key"
	CodeAnchor             Code = "yaml_anchor"
	CodeAlias              Code = "yaml_alias"
	CodeTag                Code = "yaml_tag"
	CodeMergeKey           Code = "yaml_merge_key"
	CodeMissingField       Code = "missing_field"
	CodeFieldShape         Code = "field_shape"
	CodeEncoding           Code = "invalid_utf8"
	CodeBadPattern         Code = "bad_pattern"
	CodeBadPath            Code = "bad_path"
	CodeBadQuery           Code = "bad_query"
	CodeBadProposal        Code = "bad_proposal"
	CodeOntology           Code = "ontology"
	CodeIDCollision        Code = "id_collision"
)

// Error is a failure at a path (and line) of the memory repository, or of
// the caller's input. Reason says what to change; it never carries a raw
// operating-system or library message, which stays in Err.
type Error struct {
	Kind   error  // one of the sentinels above
	Code   Code   // stable reason
	Path   string // repository path, when one is concerned
	Line   int    // 1-based line in Path, when known
	Reason string // what happened and what to change
	Err    error  // the underlying cause, if any
}

func (e *Error) Error() string {
	loc := ""
	switch {
	case e.Path != "" && e.Line > 0:
		loc = fmt.Sprintf("%s:%d: ", e.Path, e.Line)
	case e.Path != "":
		loc = e.Path + ": "
	}
	return fmt.Sprintf("%v: %s%s", e.Kind, loc, e.Reason)
}

// Unwrap returns the sentinel kind and the cause.
func (e *Error) Unwrap() []error {
	if e.Err != nil {
		return []error{e.Kind, e.Err}
	}
	return []error{e.Kind}
}

func errorf(kind error, code Code, path string, line int, format string, args ...any) *Error {
	return &Error{Kind: kind, Code: code, Path: path, Line: line, Reason: fmt.Sprintf(format, args...)}
}

// CodeOf returns the code of the *Error in err's chain, or "".
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}
