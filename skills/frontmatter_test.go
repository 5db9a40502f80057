package skills

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func fm(lines ...string) []byte {
	return []byte("---\n" + strings.Join(lines, "\n") + "\n---\nbody\n")
}

func TestFrontmatterScalarsStayStrings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  []byte
		want Frontmatter
	}{
		{"minimal", fm("name: a", "description: d"), Frontmatter{Name: "a", Description: "d"}},
		{"booleans and numbers are text", fm("name: a", "description: true", "license: 1.0", "compatibility: ~"),
			Frontmatter{Name: "a", Description: "true", License: "1.0", Compatibility: "~"}},
		{"trailing comment dropped", fm("name: a # the name", "description: d#not a comment"),
			Frontmatter{Name: "a", Description: "d#not a comment"}},
		{"double quoted escapes", fm(`name: "a"`, `description: "tab\there \"q\" \u00e9"`),
			Frontmatter{Name: "a", Description: "tab\there \"q\" é"}},
		{"single quoted", fm(`name: 'a'`, `description: 'it''s: fine # really'`),
			Frontmatter{Name: "a", Description: "it's: fine # really"}},
		{"literal block", fm("name: a", "description: |", "  line one", "  line two", "", "name2: x"[:0]),
			Frontmatter{Name: "a", Description: "line one\nline two\n"}},
		{"folded block strip", fm("name: a", "description: >-", "  line one", "  line two", "", "  para"),
			Frontmatter{Name: "a", Description: "line one line two\npara"}},
		{"folded keeps more indented", fm("name: a", "description: >", "  a", "    code", "  b"),
			Frontmatter{Name: "a", Description: "a\n  code\nb\n"}},
		{"literal keep", fm("name: a", "description: |+", "  x", "", "license: MIT"),
			Frontmatter{Name: "a", Description: "x\n\n", License: "MIT"}},
		{"explicit indentation", fm("name: a", "description: |2", "    indented", "  base"),
			Frontmatter{Name: "a", Description: "  indented\nbase\n"}},
		{"multi-line plain", fm("name: a", "description: first", "  second", "", "  third"),
			Frontmatter{Name: "a", Description: "first second\nthird"}},
		{"plain on next line", fm("name: a", "description:", "  on its own line"),
			Frontmatter{Name: "a", Description: "on its own line"}},
		{"multi-line double quoted", fm("name: a", `description: "one`, `  two \`, `  three"`),
			Frontmatter{Name: "a", Description: "one two three"}},
		{"metadata map", fm("name: a", "description: d", "metadata:", "  author: me", `  "version": "1.0"`, "  empty:"),
			Frontmatter{Name: "a", Description: "d", Metadata: map[string]string{"author": "me", "version": "1.0", "empty": ""}}},
		{"allowed-tools is space separated", fm("name: a", "description: d", "allowed-tools: fs.read  shell.run mcp/x/y"),
			Frontmatter{Name: "a", Description: "d", AllowedTools: []string{"fs.read", "shell.run", "mcp/x/y"}}},
		{"comments and blank lines", fm("# header", "", "name: a", "  # indented comment", "description: d"),
			Frontmatter{Name: "a", Description: "d"}},
		{"crlf", []byte("---\r\nname: a\r\ndescription: |\r\n  x\r\n  y\r\n---\r\nbody"),
			Frontmatter{Name: "a", Description: "x\ny\n"}},
		{"closing delimiter at EOF", []byte("---\nname: a\ndescription: d\n---"), Frontmatter{Name: "a", Description: "d"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseFrontmatter(tt.src)
			if err != nil {
				t.Fatalf("ParseFrontmatter: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %#v\nwant %#v", got, tt.want)
			}
		})
	}
}

func TestFrontmatterRejectsOutsideTheSubset(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		src    []byte
		code   Code
		reason string
	}{
		{"anchor", fm("name: &n a", "description: d"), CodeUnsupportedYAML, "anchors"},
		{"alias", fm("name: a", "description: *n"), CodeUnsupportedYAML, "aliases"},
		{"tag", fm("name: !!str a", "description: d"), CodeUnsupportedYAML, "tags"},
		{"sequence value", fm("name: a", "description: d", "license:", "  - MIT"), CodeUnsupportedYAML, "sequences"},
		{"top-level sequence", fm("- a"), CodeUnsupportedYAML, "sequences"},
		{"flow sequence", fm("name: a", "description: d", "license: [MIT]"), CodeUnsupportedYAML, "flow"},
		{"flow mapping", fm("name: a", "description: d", "license: {a: b}"), CodeUnsupportedYAML, "flow"},
		{"nested metadata", fm("name: a", "description: d", "metadata:", "  a:", "    b: c"), CodeUnsupportedYAML, "nested metadata"},
		{"mapping outside metadata", fm("name: a", "description:", "  x: y"), CodeUnsupportedYAML, "only supported under metadata"},
		{"duplicate key", fm("name: a", "name: b", "description: d"), CodeDuplicateKey, "duplicate key"},
		{"duplicate metadata key", fm("name: a", "description: d", "metadata:", "  k: 1", "  k: 2"), CodeDuplicateKey, "duplicate"},
		{"unknown key", fm("name: a", "description: d", "category: tools"), CodeUnknownKey, `"category"`},
		{"second document", fm("name: a", "description: d", "..."), CodeUnsupportedYAML, "documents"},
		{"directive", fm("%YAML 1.2", "name: a"), CodeUnsupportedYAML, "directives"},
		{"complex key", fm("? name", ": a"), CodeUnsupportedYAML, "complex keys"},
		{"colon in plain value", fm("name: a", "description: a: b"), CodeInvalidYAML, "quotes"},
		{"unclosed quote", fm("name: a", `description: "abc`), CodeInvalidYAML, "unterminated"},
		{"text after quote", fm("name: a", `description: "abc" def`), CodeInvalidYAML, "after the closing quote"},
		{"tab indentation", fm("name: a", "description: d", "metadata:", "\tk: v"), CodeInvalidYAML, "tabs"},
		{"bad indentation", fm("name: a", " description: d"), CodeInvalidYAML, "indentation"},
		{"no colon", fm("name a"), CodeInvalidYAML, "key: value"},
		{"bad escape", fm("name: a", `description: "\q"`), CodeInvalidYAML, "escape"},
		{"control char", fm("name: a", "description: a\x01b"), CodeInvalidYAML, "control character"},
		{"escaped control char", fm("name: a", `description: "a\x01b"`), CodeInvalidDescription, "control character"},
		{"bare cr", []byte("---\nname: a\rdescription: d\n---\n"), CodeInvalidYAML, "carriage return"},
		{"no frontmatter", []byte("# Title\n"), CodeMissingFrontmatter, "must start"},
		{"empty file", []byte(""), CodeMissingFrontmatter, "must start"},
		{"bom", []byte("\xef\xbb\xbf---\nname: a\n---\n"), CodeMissingFrontmatter, "byte order mark"},
		{"unterminated", []byte("---\nname: a\ndescription: d\n"), CodeUnterminated, "closing"},
		{"delimiter with trailing space", []byte("---\nname: a\ndescription: d\n--- \n"), CodeUnterminated, "closing"},
		{"non-utf8", fm("name: a", "description: caf\xe9"), CodeInvalidEncoding, "UTF-8"},
		{"missing name", fm("description: d"), CodeMissingField, "no name"},
		{"missing description", fm("name: a"), CodeMissingField, "no description"},
		{"metadata scalar", fm("name: a", "description: d", "metadata: x"), CodeInvalidMetadata, "mapping"},
		{"empty description", fm("name: a", `description: ""`), CodeInvalidDescription, "empty"},
		{"empty compatibility", fm("name: a", "description: d", `compatibility: ""`), CodeInvalidCompatibility, "1 to 500"},
		{"empty license", fm("name: a", "description: d", "license:"), CodeInvalidLicense, "license"},
		{"key inside multi-line plain", fm("name: a", "description: first", "  second: x"), CodeInvalidYAML, "key:"},
		{"text after a comment ends the value", fm("name: a", "description: first # c", "  second"), CodeInvalidYAML, "indentation"},
		{"no space after colon", fm("name:a"), CodeInvalidYAML, "key: value"},
		{"empty block scalar", fm("name: a", "description: >", "license: MIT"), CodeInvalidDescription, "empty"},
		{"nested mapping under metadata value", fm("name: a", "description: d", "metadata:", "  k: v", "    x: y"), CodeInvalidYAML, "`key:`"},
		{"quoted key not closed", fm(`"name: a`), CodeInvalidYAML, "quoted key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseFrontmatter(tt.src)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("want *Error, got %v", err)
			}
			if e.Code != tt.code || !strings.Contains(e.Reason, tt.reason) {
				t.Fatalf("got code %s reason %q; want %s containing %q", e.Code, e.Reason, tt.code, tt.reason)
			}
		})
	}
}

func TestFrontmatterErrorKinds(t *testing.T) {
	t.Parallel()
	_, err := ParseFrontmatter(fm("name: &a x"))
	if !errors.Is(err, ErrInvalidFrontmatter) {
		t.Fatalf("anchor: want ErrInvalidFrontmatter, got %v", err)
	}
	_, err = ParseFrontmatter(fm("name: a", "description: \xff"))
	if !errors.Is(err, ErrEncoding) {
		t.Fatalf("non-UTF-8: want ErrEncoding, got %v", err)
	}
	_, err = ParseFrontmatter([]byte("---\n" + strings.Repeat("#\n", MaxFrontmatterBytes) + "---\n"))
	if !errors.Is(err, ErrLimitExceeded) {
		t.Fatalf("oversize: want ErrLimitExceeded, got %v", err)
	}
}

func TestNameRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		ok   bool
	}{
		{"a", true},
		{"evidence-review", true},
		{"v2-tool-3", true},
		{strings.Repeat("a", MaxNameChars), true},
		{strings.Repeat("a", MaxNameChars+1), false},
		{"", false},
		{"Evidence", false},
		{"-lead", false},
		{"trail-", false},
		{"double--hyphen", false},
		{"under_score", false},
		{"dot.name", false},
		{"ｅvidence", false}, // fullwidth: NFKC would fold it; we reject non-ASCII
		{"café", false},
	}
	for _, tt := range tests {
		if got := nameProblem(tt.name) == ""; got != tt.ok {
			t.Errorf("nameProblem(%q) ok=%v, want %v (%s)", tt.name, got, tt.ok, nameProblem(tt.name))
		}
	}
}

func TestFieldLimitsAtAndPastTheBoundary(t *testing.T) {
	t.Parallel()
	meta := func(n int) []string {
		l := []string{"name: a", "description: d", "metadata:"}
		for i := range n {
			l = append(l, "  k"+strings.Repeat("x", i%3)+string(rune('a'+i%26))+string(rune('a'+i/26))+": v")
		}
		return l
	}
	tests := []struct {
		name string
		src  []byte
		code Code // "" means accepted
	}{
		{"description at limit", fm("name: a", "description: "+strings.Repeat("é", MaxDescriptionChars)), ""},
		{"description past limit", fm("name: a", "description: "+strings.Repeat("é", MaxDescriptionChars+1)), CodeInvalidDescription},
		{"compatibility at limit", fm("name: a", "description: d", "compatibility: "+strings.Repeat("c", MaxCompatibilityChars)), ""},
		{"compatibility past limit", fm("name: a", "description: d", "compatibility: "+strings.Repeat("c", MaxCompatibilityChars+1)), CodeInvalidCompatibility},
		{"metadata pairs at limit", fm(meta(MaxMetadataPairs)...), ""},
		{"metadata pairs past limit", fm(meta(MaxMetadataPairs + 1)...), CodeInvalidMetadata},
		{"metadata key at limit", fm("name: a", "description: d", "metadata:", "  "+strings.Repeat("k", MaxMetadataKeyBytes)+": v"), ""},
		{"metadata key past limit", fm("name: a", "description: d", "metadata:", "  "+strings.Repeat("k", MaxMetadataKeyBytes+1)+": v"), CodeInvalidMetadata},
		{"metadata value at limit", fm("name: a", "description: d", "metadata:", "  k: "+strings.Repeat("v", MaxMetadataValueBytes)), ""},
		{"metadata value past limit", fm("name: a", "description: d", "metadata:", "  k: "+strings.Repeat("v", MaxMetadataValueBytes+1)), CodeInvalidMetadata},
		{"parser events past limit", fm(meta(130)...), CodeTooManyEvents},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseFrontmatter(tt.src)
			if tt.code == "" {
				if err != nil {
					t.Fatalf("want accepted, got %v", err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.Code != tt.code {
				t.Fatalf("want code %s, got %v", tt.code, err)
			}
		})
	}
}

func TestFrontmatterSizeIncludesDelimiters(t *testing.T) {
	t.Parallel()
	build := func(total int) []byte {
		head := "---\nname: a\ndescription: d\n"
		tail := "---\n"
		pad := total - len(head) - len(tail) - 2 // "#" + "\n"
		return []byte(head + "#" + strings.Repeat("x", pad) + "\n" + tail + "body")
	}
	if _, err := ParseFrontmatter(build(MaxFrontmatterBytes)); err != nil {
		t.Fatalf("at limit: %v", err)
	}
	_, err := ParseFrontmatter(build(MaxFrontmatterBytes + 1))
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeFrontmatterTooLarge {
		t.Fatalf("one past the limit: want %s, got %v", CodeFrontmatterTooLarge, err)
	}
}
