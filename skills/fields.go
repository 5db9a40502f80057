package skills

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// This file holds the portable format's field rules, applied to the entries
// of the parsed frontmatter (yaml.go): which keys exist, what shape each
// value takes, and the limits of each.

// topLevelKey reports the keys a frontmatter may have: the specification's
// and the accepted extension keys of other agents (extensions.go).
func topLevelKey(key string) bool {
	switch key {
	case "name", "description", "license", "compatibility", "metadata", "allowed-tools":
		return true
	}
	_, ok := extensionShapeOf(key)
	return ok
}

func fieldErr(code Code, line int, format string, args ...any) *Error {
	return &Error{Kind: ErrInvalidFrontmatter, Code: code,
		Reason: fmt.Sprintf("line %d: ", line) + fmt.Sprintf(format, args...)}
}

// fieldsOf applies the portable format's field rules to the top-level
// entries.
func fieldsOf(s *yamlSource, entries []entry) (Frontmatter, error) {
	var fm Frontmatter
	var haveName, haveDesc bool
	for _, e := range entries {
		if shape, ok := extensionShapeOf(e.Key); ok {
			v, err := s.extension(e, shape)
			if err != nil {
				return fm, err
			}
			if fm.Extensions == nil {
				fm.Extensions = map[string]json.RawMessage{}
			}
			fm.Extensions[e.Key] = v
			continue
		}
		switch e.Key {
		case "metadata":
			if err := metadataOf(s, e, &fm); err != nil {
				return fm, err
			}
			continue
		case "allowed-tools":
			if err := allowedToolsOf(s, e, &fm); err != nil {
				return fm, err
			}
			continue
		}
		v, err := s.scalar(e.Key, e.Value, "a string")
		if err != nil {
			return fm, err
		}
		switch e.Key {
		case "name":
			haveName = true
			if reason := nameProblem(v); reason != "" {
				return fm, fieldErr(CodeInvalidName, e.Line, "%s", reason)
			}
			fm.Name = v
		case "description":
			haveDesc = true
			n := utf8.RuneCountInString(v)
			switch {
			case strings.TrimSpace(v) == "":
				return fm, fieldErr(CodeInvalidDescription, e.Line, "description must not be empty; say what the Skill does and when to use it")
			case n > MaxDescriptionChars:
				return fm, fieldErr(CodeInvalidDescription, e.Line, "description has %d characters; the limit is %d", n, MaxDescriptionChars)
			case hasControl(v):
				return fm, fieldErr(CodeInvalidDescription, e.Line, "description contains a control character")
			}
			fm.Description = v
		case "license":
			if strings.TrimSpace(v) == "" || hasControl(v) {
				return fm, fieldErr(CodeInvalidLicense, e.Line, "license must be a non-empty line of text; remove the key or name the license")
			}
			fm.License = v
		case "compatibility":
			n := utf8.RuneCountInString(v)
			switch {
			case n == 0 || n > MaxCompatibilityChars:
				return fm, fieldErr(CodeInvalidCompatibility, e.Line, "compatibility has %d characters; it must have 1 to %d", n, MaxCompatibilityChars)
			case hasControl(v):
				return fm, fieldErr(CodeInvalidCompatibility, e.Line, "compatibility contains a control character")
			}
			fm.Compatibility = v
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

// metadataOf reads `metadata`: a mapping of string keys to string values,
// indented or, as OpenClaw writes it, one flow mapping (JSON). OpenClaw's
// runtime requirements nest under metadata.openclaw (or its aliases
// clawdbot and clawdis): those entries are inert extensions
// (Frontmatter.Extensions["metadata.openclaw"]), which grant nothing; any
// other nested value is still refused.
func metadataOf(s *yamlSource, e entry, fm *Frontmatter) error {
	n := e.Value
	switch {
	case n.Kind == yaml.ScalarNode:
		return fieldErr(CodeInvalidMetadata, e.Line, "metadata must be an indented mapping of string keys to string values")
	case n.Kind != yaml.MappingNode:
		_, err := s.scalar("metadata", n, "an indented mapping of string keys to string values")
		return err
	}
	entries, err := s.mapping(n, nil)
	if err != nil {
		return err
	}
	if len(entries) > MaxMetadataPairs {
		return fieldErr(CodeInvalidMetadata, e.Line, "metadata has %d entries; the limit is %d", len(entries), MaxMetadataPairs)
	}
	fm.Metadata = make(map[string]string, len(entries))
	for _, m := range entries {
		if openClawMetadataKey(m.Key) {
			var b strings.Builder
			if err := s.tree("metadata."+m.Key, m.Value, &b); err != nil {
				return err
			}
			if fm.Extensions == nil {
				fm.Extensions = map[string]json.RawMessage{}
			}
			fm.Extensions["metadata."+m.Key] = json.RawMessage(b.String())
			continue
		}
		if m.Value.Kind == yaml.MappingNode && m.Value.Style&yaml.FlowStyle == 0 {
			return s.errAt(m.Value.Line, CodeUnsupportedYAML, "nested metadata is not supported; values must be strings")
		}
		v, err := s.scalar("metadata value of "+strconv.Quote(m.Key), m.Value, "a string")
		if err != nil {
			return err
		}
		switch {
		case m.Key == "" || len(m.Key) > MaxMetadataKeyBytes:
			return fieldErr(CodeInvalidMetadata, m.Line, "metadata key has %d bytes; it must have 1 to %d", len(m.Key), MaxMetadataKeyBytes)
		case len(v) > MaxMetadataValueBytes:
			return fieldErr(CodeInvalidMetadata, m.Line, "metadata value of %s has %d bytes; the limit is %d", strconv.Quote(m.Key), len(v), MaxMetadataValueBytes)
		case hasControl(m.Key) || hasControl(v):
			return fieldErr(CodeInvalidMetadata, m.Line, "metadata entry %s contains a control character", strconv.Quote(m.Key))
		}
		fm.Metadata[m.Key] = v
	}
	if len(fm.Metadata) == 0 {
		fm.Metadata = nil // only OpenClaw's requirements: no metadata of the specification's
	}
	return nil
}

// openClawMetadataKey reports whether key, under metadata, holds OpenClaw's
// runtime requirements (its documented key and the two aliases it reads).
func openClawMetadataKey(key string) bool {
	return key == "openclaw" || key == "clawdbot" || key == "clawdis"
}

// allowedToolsOf reads `allowed-tools`: the specification's one
// space-separated string, or a list with one tool per entry (as Claude Code
// Skills write it). Either way the entries are requirements: they grant
// nothing.
func allowedToolsOf(s *yamlSource, e entry, fm *Frontmatter) error {
	if e.Value.Kind != yaml.SequenceNode {
		v, err := s.scalar("allowed-tools", e.Value, "a space-separated string or a list of strings")
		if err != nil {
			return err
		}
		if hasControl(v) {
			return fieldErr(CodeInvalidAllowedTools, e.Line, "allowed-tools contains a control character")
		}
		fm.AllowedTools = strings.Fields(v)
		return nil
	}
	items, err := s.list("allowed-tools", e.Value)
	if err != nil {
		return err
	}
	for _, it := range items {
		t := strings.TrimSpace(it.Text)
		switch {
		case t == "":
			return fieldErr(CodeInvalidAllowedTools, it.Line, "allowed-tools has an empty entry; remove it or name a tool")
		case hasControl(t) || strings.ContainsRune(t, '\n'):
			return fieldErr(CodeInvalidAllowedTools, it.Line, "allowed-tools entry %s must be one line without control characters", strconv.Quote(t))
		}
		fm.AllowedTools = append(fm.AllowedTools, t)
	}
	return nil
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
