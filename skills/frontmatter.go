package skills

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"strings"
	"unicode/utf8"

	"github.com/adrg/frontmatter"
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

// Frontmatter is the portable metadata of one SKILL.md. Every value is a
// string as written: the strict YAML walk never turns `true` or `1.0` into
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
	// AllowedTools lists the `allowed-tools` entries: the words of the
	// specification's space-separated string, or the entries of a list.
	// They are descriptive only: they grant nothing.
	AllowedTools []string `json:"allowed_tools,omitempty"`
	// Extensions holds the keys other agents' dialects write (ExtensionKeys),
	// each value as JSON with every scalar a string (`user-invocable: false`
	// is "false"). They are inert: nothing in Pablo acts on them and they
	// grant nothing; `pablo skills show` reports them.
	Extensions map[string]json.RawMessage `json:"extensions,omitempty"`
}

func (f Frontmatter) clone() Frontmatter {
	f.Metadata = maps.Clone(f.Metadata)
	f.AllowedTools = append([]string(nil), f.AllowedTools...)
	if len(f.AllowedTools) == 0 {
		f.AllowedTools = nil
	}
	if f.Extensions != nil {
		ext := make(map[string]json.RawMessage, len(f.Extensions))
		for k, v := range f.Extensions {
			ext[k] = bytes.Clone(v)
		}
		f.Extensions = ext
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
// included, as readFrontmatter found them) into the portable fields.
func decodeFrontmatter(raw []byte) (Frontmatter, error) {
	if !utf8.Valid(raw) {
		return Frontmatter{}, &Error{Kind: ErrEncoding, Code: CodeInvalidEncoding,
			Reason: "frontmatter is not valid UTF-8; save SKILL.md as UTF-8"}
	}
	lf := strings.ReplaceAll(string(raw), "\r\n", "\n")
	if i := strings.IndexByte(lf, '\r'); i >= 0 {
		line := 1 + strings.Count(lf[:i], "\n")
		return Frontmatter{}, &Error{Kind: ErrInvalidFrontmatter, Code: CodeInvalidYAML,
			Reason: fmt.Sprintf("line %d: bare carriage return; use LF or CRLF line endings", line)}
	}
	content, err := splitFrontmatter(lf)
	if err != nil {
		return Frontmatter{}, err
	}
	src, entries, err := parseYAML(content, 2, topLevelKey)
	if err == nil {
		var fm Frontmatter
		if fm, err = fieldsOf(src, entries); err == nil {
			return fm, nil
		}
	}
	var ye *yamlError
	if errors.As(err, &ye) {
		return Frontmatter{}, &Error{Kind: ErrInvalidFrontmatter, Code: ye.Code, Reason: ye.Error()}
	}
	return Frontmatter{}, err
}

// splitFrontmatter returns the YAML between the delimiters of raw (LF line
// endings), split by github.com/adrg/frontmatter. readFrontmatter has
// already bounded raw and found its closing line; adrg/frontmatter, like
// most readers of SKILL.md, also ends the frontmatter at a `---` line with
// surrounding spaces, so such a line inside is refused: other tools would
// read the Skill differently.
func splitFrontmatter(raw string) (string, error) {
	var content []byte
	format := frontmatter.NewFormat("---", "---", func(data []byte, v any) error {
		*v.(*[]byte) = data
		return nil
	})
	rest, err := frontmatter.MustParse(strings.NewReader(raw), &content, format)
	if err != nil {
		return "", &Error{Kind: ErrInvalidFrontmatter, Code: CodeMissingFrontmatter,
			Reason: "SKILL.md must start with a line containing only --- followed by YAML frontmatter", Err: err}
	}
	if len(rest) != 0 {
		line := 3 + bytes.Count(content, []byte("\n"))
		return "", &Error{Kind: ErrInvalidFrontmatter, Code: CodeUnsupportedYAML,
			Reason: fmt.Sprintf("line %d: a line of only --- and spaces ends the frontmatter for other readers of SKILL.md; reword the line so it holds other text", line)}
	}
	return string(content), nil
}
