package skills

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits of the portable frontmatter, as the reference fixes them.
const (
	// MaxFrontmatterBytes bounds the frontmatter, both `---` delimiter lines
	// and their line endings included.
	MaxFrontmatterBytes = 16 << 10
	// MaxNameChars bounds `name`.
	MaxNameChars = 64
	// MaxDescriptionChars bounds `description` (in characters, not bytes).
	MaxDescriptionChars = 1024
	// MaxCompatibilityChars bounds `compatibility` (in characters).
	MaxCompatibilityChars = 500
	// MaxMetadataPairs bounds the entries of `metadata`.
	MaxMetadataPairs = 64
	// MaxMetadataKeyBytes bounds one `metadata` key.
	MaxMetadataKeyBytes = 256
	// MaxMetadataValueBytes bounds one `metadata` value.
	MaxMetadataValueBytes = 4096
)

// topLevelKeys are the only keys the portable format allows.
var topLevelKeys = map[string]bool{
	"name": true, "description": true, "license": true,
	"compatibility": true, "metadata": true, "allowed-tools": true,
}

// Frontmatter is the portable metadata of one SKILL.md. Every value is a
// string as written: the YAML subset never turns `true` or `1.0` into
// another type.
type Frontmatter struct {
	// Name is the Skill's name; it equals its package directory name.
	Name string `json:"name"`
	// Description says what the Skill does and when to use it.
	Description string `json:"description"`
	// License names the license, if declared.
	License string `json:"license,omitempty"`
	// Compatibility states environment requirements, if declared.
	Compatibility string `json:"compatibility,omitempty"`
	// Metadata holds free-form string pairs.
	Metadata map[string]string `json:"metadata,omitempty"`
	// AllowedTools lists the space-separated `allowed-tools` entries. They
	// are descriptive only: they grant nothing.
	AllowedTools []string `json:"allowed_tools,omitempty"`
}

func (f Frontmatter) clone() Frontmatter {
	f.Metadata = maps.Clone(f.Metadata)
	f.AllowedTools = append([]string(nil), f.AllowedTools...)
	if len(f.AllowedTools) == 0 {
		f.AllowedTools = nil
	}
	return f
}

// ParseFrontmatter parses the frontmatter at the start of SKILL.md content
// (the body after the closing delimiter, if present, is ignored and never
// parsed). It does not check the name against a directory; discovery does.
// Failures are *Error values with Kind ErrInvalidFrontmatter, ErrEncoding or
// ErrLimitExceeded.
func ParseFrontmatter(data []byte) (Frontmatter, error) {
	raw, _, err := readFrontmatter(bytes.NewReader(data))
	if err != nil {
		return Frontmatter{}, err
	}
	return decodeFrontmatter(raw)
}

// readFrontmatter reads from r only as far as the closing delimiter (in
// small chunks, never past MaxFrontmatterBytes+1 bytes) and returns the
// frontmatter bytes, delimiters included, and any bytes read past it.
func readFrontmatter(r io.Reader) (raw, rest []byte, err error) {
	buf := make([]byte, 0, 512)
	scan := -1 // offset of the next line to inspect, once the opening is known
	eof := false
	for {
		if scan < 0 {
			switch {
			case bytes.HasPrefix(buf, []byte("---\n")):
				scan = 4
			case bytes.HasPrefix(buf, []byte("---\r\n")):
				scan = 5
			case len(buf) >= 5 || eof || (len(buf) > 0 && !bytes.HasPrefix([]byte("---\r\n"), buf) && !bytes.HasPrefix([]byte("---\n"), buf)):
				return nil, nil, missingFrontmatter(buf)
			}
		}
		if scan >= 0 {
			for {
				nl := bytes.IndexByte(buf[scan:], '\n')
				if nl < 0 {
					break
				}
				end := scan + nl + 1
				line := bytes.TrimSuffix(buf[scan:end-1], []byte("\r"))
				if string(line) == "---" {
					if end > MaxFrontmatterBytes {
						return nil, nil, tooLarge()
					}
					return buf[:end], buf[end:], nil
				}
				scan = end
			}
			if eof {
				if string(buf[scan:]) == "---" && len(buf) <= MaxFrontmatterBytes {
					return buf, nil, nil
				}
				if len(buf) > MaxFrontmatterBytes {
					return nil, nil, tooLarge()
				}
				return nil, nil, &Error{Kind: ErrInvalidFrontmatter, Code: CodeUnterminated,
					Reason: "frontmatter has no closing `---` line; end the metadata with a line containing only ---"}
			}
			if len(buf) > MaxFrontmatterBytes {
				return nil, nil, tooLarge()
			}
		}
		if eof {
			return nil, nil, missingFrontmatter(buf)
		}
		want := min(max(cap(buf)-len(buf), 512), MaxFrontmatterBytes+1-len(buf))
		buf = growTo(buf, len(buf)+want)
		n, rerr := r.Read(buf[len(buf) : len(buf)+want])
		buf = buf[:len(buf)+n]
		if rerr == io.EOF {
			eof = true
		} else if rerr != nil {
			return nil, nil, &Error{Kind: ErrIO, Code: CodeIOError, Reason: "cannot read SKILL.md", Err: rerr}
		}
	}
}

func growTo(b []byte, n int) []byte {
	if cap(b) >= n {
		return b
	}
	nb := make([]byte, len(b), max(n, 2*cap(b)))
	copy(nb, b)
	return nb
}

func tooLarge() *Error {
	return &Error{Kind: ErrLimitExceeded, Code: CodeFrontmatterTooLarge,
		Reason: fmt.Sprintf("frontmatter exceeds %d bytes including its delimiters; move long text into the body or a resource", MaxFrontmatterBytes)}
}

func missingFrontmatter(buf []byte) *Error {
	reason := "SKILL.md must start with a line containing only --- followed by YAML frontmatter"
	if bytes.HasPrefix(buf, []byte("\xef\xbb\xbf")) {
		reason = "SKILL.md starts with a UTF-8 byte order mark; save it without a BOM so the first line is ---"
	}
	return &Error{Kind: ErrInvalidFrontmatter, Code: CodeMissingFrontmatter, Reason: reason}
}

// decodeFrontmatter checks and decodes raw frontmatter bytes (delimiters
// included) into the portable fields.
func decodeFrontmatter(raw []byte) (Frontmatter, error) {
	if !utf8.Valid(raw) {
		return Frontmatter{}, &Error{Kind: ErrEncoding, Code: CodeInvalidEncoding,
			Reason: "frontmatter is not valid UTF-8; save SKILL.md as UTF-8"}
	}
	open := 4
	if bytes.HasPrefix(raw, []byte("---\r\n")) {
		open = 5
	}
	content := raw[open:]
	// Drop the closing delimiter line.
	content = bytes.TrimSuffix(content, []byte("\n"))
	content = bytes.TrimSuffix(content, []byte("\r"))
	content = bytes.TrimSuffix(content, []byte("---"))
	text := string(content)
	if i := strings.IndexByte(strings.ReplaceAll(text, "\r\n", "\n"), '\r'); i >= 0 {
		line := 2 + strings.Count(strings.ReplaceAll(text, "\r\n", "\n")[:i], "\n")
		return Frontmatter{}, &Error{Kind: ErrInvalidFrontmatter, Code: CodeInvalidYAML,
			Reason: fmt.Sprintf("line %d: bare carriage return; use LF or CRLF line endings", line)}
	}
	text = strings.ReplaceAll(text, "\r\n", "\n")
	pairs, err := parseYAMLSubset(text, 2, topLevelKeys, "metadata")
	if err != nil {
		var ye *yamlError
		if errors.As(err, &ye) {
			return Frontmatter{}, &Error{Kind: ErrInvalidFrontmatter, Code: ye.Code, Reason: ye.Error()}
		}
		return Frontmatter{}, err
	}
	return fieldsOf(pairs)
}

func fieldErr(code Code, line int, format string, args ...any) *Error {
	return &Error{Kind: ErrInvalidFrontmatter, Code: code,
		Reason: fmt.Sprintf("line %d: ", line) + fmt.Sprintf(format, args...)}
}

// fieldsOf applies the portable format's field rules to parsed pairs.
func fieldsOf(pairs []yamlPair) (Frontmatter, error) {
	var fm Frontmatter
	var haveName, haveDesc bool
	for _, p := range pairs {
		if p.IsMap && p.Key != "metadata" {
			return fm, fieldErr(CodeUnsupportedYAML, p.Line, "%s must be a string", p.Key)
		}
		switch p.Key {
		case "name":
			haveName = true
			if reason := nameProblem(p.Scalar); reason != "" {
				return fm, fieldErr(CodeInvalidName, p.Line, "%s", reason)
			}
			fm.Name = p.Scalar
		case "description":
			haveDesc = true
			n := utf8.RuneCountInString(p.Scalar)
			switch {
			case strings.TrimSpace(p.Scalar) == "":
				return fm, fieldErr(CodeInvalidDescription, p.Line, "description must not be empty; say what the Skill does and when to use it")
			case n > MaxDescriptionChars:
				return fm, fieldErr(CodeInvalidDescription, p.Line, "description has %d characters; the limit is %d", n, MaxDescriptionChars)
			case hasControl(p.Scalar):
				return fm, fieldErr(CodeInvalidDescription, p.Line, "description contains a control character")
			}
			fm.Description = p.Scalar
		case "license":
			if strings.TrimSpace(p.Scalar) == "" || hasControl(p.Scalar) {
				return fm, fieldErr(CodeInvalidLicense, p.Line, "license must be a non-empty line of text; remove the key or name the license")
			}
			fm.License = p.Scalar
		case "compatibility":
			n := utf8.RuneCountInString(p.Scalar)
			switch {
			case n == 0 || n > MaxCompatibilityChars:
				return fm, fieldErr(CodeInvalidCompatibility, p.Line, "compatibility has %d characters; it must have 1 to %d", n, MaxCompatibilityChars)
			case hasControl(p.Scalar):
				return fm, fieldErr(CodeInvalidCompatibility, p.Line, "compatibility contains a control character")
			}
			fm.Compatibility = p.Scalar
		case "metadata":
			if !p.IsMap {
				return fm, fieldErr(CodeInvalidMetadata, p.Line, "metadata must be an indented mapping of string keys to string values")
			}
			if len(p.Map) > MaxMetadataPairs {
				return fm, fieldErr(CodeInvalidMetadata, p.Line, "metadata has %d entries; the limit is %d", len(p.Map), MaxMetadataPairs)
			}
			fm.Metadata = make(map[string]string, len(p.Map))
			for _, m := range p.Map {
				switch {
				case m.Key == "" || len(m.Key) > MaxMetadataKeyBytes:
					return fm, fieldErr(CodeInvalidMetadata, m.Line, "metadata key has %d bytes; it must have 1 to %d", len(m.Key), MaxMetadataKeyBytes)
				case len(m.Scalar) > MaxMetadataValueBytes:
					return fm, fieldErr(CodeInvalidMetadata, m.Line, "metadata value of %s has %d bytes; the limit is %d", strconv.Quote(m.Key), len(m.Scalar), MaxMetadataValueBytes)
				case hasControl(m.Key) || hasControl(m.Scalar):
					return fm, fieldErr(CodeInvalidMetadata, m.Line, "metadata entry %s contains a control character", strconv.Quote(m.Key))
				}
				fm.Metadata[m.Key] = m.Scalar
			}
		case "allowed-tools":
			if hasControl(p.Scalar) {
				return fm, fieldErr(CodeInvalidAllowedTools, p.Line, "allowed-tools contains a control character")
			}
			fm.AllowedTools = strings.Fields(p.Scalar)
		}
	}
	switch {
	case !haveName:
		return fm, &Error{Kind: ErrInvalidFrontmatter, Code: CodeMissingField, Reason: "frontmatter has no name; add `name: <directory name>`"}
	case !haveDesc:
		return fm, &Error{Kind: ErrInvalidFrontmatter, Code: CodeMissingField, Reason: "frontmatter has no description; add `description: <what the Skill does>`"}
	}
	return fm, nil
}

// hasControl reports C0/C1 control characters other than tab and LF, which
// double-quoted escapes could otherwise smuggle into a value.
func hasControl(s string) bool {
	for _, r := range s {
		if (r < 0x20 && r != '\t' && r != '\n') || (r >= 0x7f && r < 0xa0) {
			return true
		}
	}
	return false
}

// nameProblem returns why name is not a valid Skill name, or "".
//
// The reference NFKC-normalizes names before checking them. This package
// accepts ASCII names only, which NFKC leaves unchanged, and rejects any
// other name with a clear reason instead of normalizing it: that keeps
// golang.org/x/text out of the module and rules out look-alike names.
func nameProblem(name string) string {
	n := utf8.RuneCountInString(name)
	switch {
	case name == "":
		return "name must not be empty"
	case n > MaxNameChars:
		return fmt.Sprintf("name has %d characters; the limit is %d", n, MaxNameChars)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 0x80:
			return fmt.Sprintf("name %s contains non-ASCII characters; use lowercase ASCII letters, digits and hyphens (Unicode names are not supported)", strconv.Quote(name))
		case c >= 'A' && c <= 'Z':
			return fmt.Sprintf("name %s must be lowercase", strconv.Quote(name))
		case !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-'):
			return fmt.Sprintf("name %s may contain only lowercase letters, digits and hyphens", strconv.Quote(name))
		}
	}
	switch {
	case name[0] == '-' || name[len(name)-1] == '-':
		return fmt.Sprintf("name %s must not start or end with a hyphen", strconv.Quote(name))
	case strings.Contains(name, "--"):
		return fmt.Sprintf("name %s must not contain consecutive hyphens", strconv.Quote(name))
	}
	return ""
}
