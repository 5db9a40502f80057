package skills

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"
)

// skill.read bounds (REFERENCE §4.4).
const (
	// ReadToolName is the native capability ID of the resource tool.
	ReadToolName = "skill.read"
	// MaxReadSkillBytes bounds the `skill` argument.
	MaxReadSkillBytes = 128
	// MaxReadPathBytes bounds the `path` argument.
	MaxReadPathBytes = 4096
	// MaxResourceBytes bounds one resource and the `max_bytes` argument.
	MaxResourceBytes = 1 << 20
)

// ReadToolDescription is the description skill.read is offered with.
const ReadToolDescription = "Read a UTF-8 file inside an activated Skill package. " +
	"`skill` is the qualified ROOT/NAME; `path` is relative to the package directory. " +
	"Symlinks are refused. Reading a file grants no authority and never runs it."

// ReadArgumentsSchema is the closed JSON Schema (Draft 2020-12) of
// skill.read's arguments. Its bounds are counted in characters; decoding
// with ParseReadArguments additionally enforces them in bytes.
const ReadArgumentsSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "skill": {
      "type": "string",
      "minLength": 1,
      "maxLength": 128,
      "description": "Qualified name ROOT/NAME of an activated Skill."
    },
    "path": {
      "type": "string",
      "minLength": 1,
      "maxLength": 4096,
      "description": "Path relative to the Skill package directory, '/'-separated; no '..', no '\\\\', not absolute."
    },
    "max_bytes": {
      "type": "integer",
      "minimum": 1,
      "maximum": 1048576,
      "description": "Largest file to return, in bytes."
    }
  },
  "required": ["skill", "path"],
  "additionalProperties": false
}`

// ReadArguments are skill.read's decoded arguments.
type ReadArguments struct {
	// Skill is the qualified ROOT/NAME.
	Skill string `json:"skill"`
	// Path is package-relative.
	Path string `json:"path"`
	// MaxBytes optionally narrows the largest file returned.
	MaxBytes *int `json:"max_bytes,omitempty"`
}

// ParseReadArguments decodes and checks skill.read arguments: a single JSON
// object with no unknown fields, no NUL, and every bound of
// ReadArgumentsSchema (in bytes). Failures wrap ErrInvalidArguments.
func ParseReadArguments(raw []byte) (ReadArguments, error) {
	var args ReadArguments
	bad := func(reason string) (ReadArguments, error) {
		return ReadArguments{}, &Error{Kind: ErrInvalidArguments, Code: CodeInvalidArguments, Reason: reason}
	}
	// Decode the members first so names match exactly: encoding/json would
	// otherwise accept "Skill" or "PATH" for the closed schema's fields.
	var members map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&members); err != nil || members == nil {
		return bad("arguments must be one JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return bad("arguments must be exactly one JSON object")
	}
	for name, v := range members {
		var err error
		switch name {
		case "skill":
			err = decodeStrict(v, &args.Skill)
		case "path":
			err = decodeStrict(v, &args.Path)
		case "max_bytes":
			var n int
			if err = decodeStrict(v, &n); err == nil {
				args.MaxBytes = &n
			}
		default:
			return bad("unknown field " + strconv.Quote(name) + "; skill.read takes skill, path and max_bytes")
		}
		if err != nil {
			return bad("field " + strconv.Quote(name) + " has the wrong type")
		}
	}
	switch {
	case len(args.Skill) == 0 || len(args.Skill) > MaxReadSkillBytes:
		return bad(fmt.Sprintf("`skill` must be a string of 1 to %d bytes", MaxReadSkillBytes))
	case len(args.Path) == 0:
		return bad("`path` is required")
	case strings.ContainsRune(args.Skill, 0) || strings.ContainsRune(args.Path, 0):
		return bad("arguments must not contain NUL")
	case args.MaxBytes != nil && (*args.MaxBytes < 1 || *args.MaxBytes > MaxResourceBytes):
		return bad(fmt.Sprintf("`max_bytes` must be an integer from 1 to %d", MaxResourceBytes))
	}
	return args, nil
}

// decodeStrict decodes one member value, refusing null.
func decodeStrict(v json.RawMessage, dst any) error {
	if string(bytes.TrimSpace(v)) == "null" {
		return errors.New("null")
	}
	return json.Unmarshal(v, dst)
}

// ReadOptions carries the host's bounds for one skill.read call.
type ReadOptions struct {
	// MaxBytes caps the file size returned, typically
	// max_tool_output_bytes − 1024. Zero means MaxResourceBytes; larger
	// values are reduced to it.
	MaxBytes int
}

// Resource is skill.read's success payload (`skill.resource`).
type Resource struct {
	// QualifiedName is the Skill's ROOT/NAME.
	QualifiedName string `json:"qualified_name"`
	// Path is the package-relative path read.
	Path string `json:"path"`
	// SHA256 is the lowercase hex digest of the bytes returned.
	SHA256 string `json:"sha256"`
	// Bytes is the size of Text in bytes.
	Bytes int `json:"bytes"`
	// Text is the whole file.
	Text string `json:"text"`
}

// ErrorPayload is skill.read's failure payload (`skill.error`).
type ErrorPayload struct {
	// Code is the error's Code.
	Code Code `json:"code"`
}

// CodeOf returns the Code of an error from this package, CodeIOError for
// any other error and "" for nil.
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeIOError
}

// checkResourcePath returns why path is not an acceptable package-relative
// path, or "".
func checkResourcePath(path string) string {
	switch {
	case path == "" || len(path) > MaxReadPathBytes:
		return fmt.Sprintf("path must have 1 to %d bytes", MaxReadPathBytes)
	case !utf8.ValidString(path):
		return "path must be valid UTF-8"
	case strings.IndexByte(path, 0) >= 0:
		return "path must not contain NUL"
	case strings.Contains(path, `\`):
		return `path must use '/' separators and no '\'`
	case strings.HasPrefix(path, "/"):
		return "path must be relative to the Skill package, not absolute"
	}
	for _, c := range strings.Split(path, "/") {
		switch c {
		case "..":
			return "path must not contain '..'"
		case "", ".":
			return "path must not contain empty or '.' components"
		}
	}
	return ""
}

// Read performs skill.read: it reads one whole UTF-8 file inside an active
// Skill's package, opening every component without following symlinks from
// the admitted package directory. It never executes anything.
func (a *Active) Read(ctx context.Context, args ReadArguments, opts ReadOptions) (Resource, error) {
	if err := ctx.Err(); err != nil {
		return Resource{}, err
	}
	i, err := a.find(args.Skill)
	if err != nil || !strings.Contains(args.Skill, "/") {
		if err == nil {
			err = &Error{Kind: ErrInvalidArguments, Code: CodeInvalidArguments, Skill: args.Skill,
				Reason: "skill must be the qualified ROOT/NAME"}
		}
		return Resource{}, err
	}
	s := a.skills[i].Skill
	fail := func(kind error, code Code, reason string, cause error) (Resource, error) {
		return Resource{}, &Error{Kind: kind, Code: code, Skill: s.QualifiedName, Path: args.Path, Reason: reason, Err: cause}
	}
	if reason := checkResourcePath(args.Path); reason != "" {
		return fail(ErrInvalidArguments, CodeInvalidPath, reason, nil)
	}
	limit := MaxResourceBytes
	if opts.MaxBytes > 0 {
		limit = min(limit, opts.MaxBytes)
	}
	if args.MaxBytes != nil {
		if *args.MaxBytes < 1 || *args.MaxBytes > MaxResourceBytes {
			return fail(ErrInvalidArguments, CodeInvalidArguments, fmt.Sprintf("max_bytes must be 1 to %d", MaxResourceBytes), nil)
		}
		limit = min(limit, *args.MaxBytes)
	}
	if _, ok := a.cat.inline[s.QualifiedName]; ok {
		return fail(ErrNotFound, CodeNotFound, "an inline Skill has no files; its instructions are all it holds", nil)
	}
	finish := func(data []byte) (Resource, error) {
		if len(data) > limit {
			return fail(ErrLimitExceeded, CodeTooLarge, fmt.Sprintf("the file has %d bytes; the limit for this call is %d", len(data), limit), nil)
		}
		if !utf8.Valid(data) {
			return fail(ErrEncoding, CodeUnsupportedEncoding, "the file is not UTF-8 text", nil)
		}
		sum := sha256.Sum256(data)
		return Resource{
			QualifiedName: s.QualifiedName,
			Path:          args.Path,
			SHA256:        hex.EncodeToString(sum[:]),
			Bytes:         len(data),
			Text:          string(data),
		}, nil
	}
	if t, ok := a.cat.trees[s.QualifiedName]; ok {
		switch data, prob := t.read(args.Path); prob {
		case probNone:
			return finish(data)
		case probWrongType:
			return fail(ErrUnsafePath, CodeNotFile, "the path is not a regular file", nil)
		default:
			return fail(ErrNotFound, CodeNotFound, "no such file in the Skill package", nil)
		}
	}
	var (
		f     *os.File
		st    fs.FileInfo
		prob  problem
		cause error
	)
	if ref, ok := a.cat.files[s.QualifiedName]; ok {
		if args.Path != SkillFile {
			return fail(ErrNotFound, CodeNotFound, "a single-file Skill holds only its SKILL.md (the file itself)", nil)
		}
		f, st, prob, cause = openSingleFile(ref.path, ref.info)
	} else {
		dir, err := a.cat.openPackage(s)
		if err != nil {
			return Resource{}, err
		}
		parts := strings.Split(args.Path, "/")
		for _, part := range parts[:len(parts)-1] {
			if err := ctx.Err(); err != nil {
				dir.Close()
				return Resource{}, err
			}
			next, _, prob, cause := openDirNoFollow(dir, part, nil)
			dir.Close()
			switch prob {
			case probNone:
				dir = next
				continue
			case probMissing:
				return fail(ErrNotFound, CodeNotFound, "no such file in the Skill package", nil)
			case probSymlink:
				return fail(ErrUnsafePath, CodeSymlink, "a path component is a symlink; skill.read never follows symlinks", nil)
			case probWrongType:
				return fail(ErrNotFound, CodeNotFound, "a parent path component is not a directory", nil)
			case probChanged:
				return fail(ErrChanged, CodeChanged, "a directory changed while it was opened", nil)
			default:
				return fail(ErrIO, CodeIOError, "a directory cannot be opened", cause)
			}
		}
		f, st, prob, cause = openFileNoFollow(dir, parts[len(parts)-1])
		dir.Close()
	}
	switch prob {
	case probNone:
	case probMissing:
		return fail(ErrNotFound, CodeNotFound, "no such file in the Skill package", nil)
	case probSymlink:
		return fail(ErrUnsafePath, CodeSymlink, "the file is a symlink; skill.read never follows symlinks", nil)
	case probWrongType:
		return fail(ErrUnsafePath, CodeNotFile, "the path is not a regular file", nil)
	case probChanged:
		return fail(ErrChanged, CodeChanged, "the file changed while it was opened", nil)
	default:
		return fail(ErrIO, CodeIOError, "the file cannot be opened", cause)
	}
	defer f.Close()
	if st.Size() > int64(limit) {
		return fail(ErrLimitExceeded, CodeTooLarge, fmt.Sprintf("the file has %d bytes; the limit for this call is %d", st.Size(), limit), nil)
	}
	data, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return fail(ErrIO, CodeIOError, "the file cannot be read", err)
	}
	if len(data) > limit {
		return fail(ErrLimitExceeded, CodeTooLarge, fmt.Sprintf("the file has more than %d bytes, the limit for this call", limit), nil)
	}
	return finish(data)
}
