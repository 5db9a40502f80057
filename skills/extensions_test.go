package skills

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestDialectCorpusLoads loads testdata/dialects, one root per dialect
// (Claude Code, the Agent Skills specification, OpenHands, Codex, OpenClaw): every
// package is admitted, with its extension keys kept as written.
func TestDialectCorpusLoads(t *testing.T) {
	t.Parallel()
	roots := map[string]string{}
	for _, d := range []string{"agent-skills", "claude-code", "codex", "openclaw", "openhands"} {
		dir, err := filepath.Abs(filepath.Join("testdata", "dialects", d))
		must(t, err)
		roots[d] = dir
	}
	cat, err := Discover(context.Background(), Options{Roots: roots})
	if err != nil {
		t.Fatal(err)
	}
	if f := cat.Findings(); len(f) != 0 {
		t.Fatalf("findings: %v", f)
	}
	var got []string
	for _, s := range cat.Skills() {
		got = append(got, s.QualifiedName)
	}
	want := []string{"agent-skills/pdf-forms", "claude-code/commit-helper", "claude-code/release-notes", "codex/lint-fixer", "openclaw/market-quotes", "openclaw/todo-sync", "openhands/github-triage"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("skills = %v, want %v", got, want)
	}
	ext := func(name string) map[string]string {
		s, err := cat.Lookup(name)
		must(t, err)
		out := map[string]string{}
		for k, v := range s.Extensions {
			out[k] = string(v)
		}
		return out
	}
	if got, want := ext("claude-code/commit-helper"), map[string]string{
		"argument-hint": `["scope"]`, "disable-model-invocation": `"true"`, "user-invocable": `"true"`, "model": `"haiku"`,
	}; !reflect.DeepEqual(got, want) {
		t.Errorf("commit-helper extensions = %v, want %v", got, want)
	}
	rn := ext("claude-code/release-notes")
	if rn["hooks"] != `{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"./scripts/check-readonly.sh","timeout":"10"}]}]}` ||
		rn["paths"] != `["CHANGELOG.md","docs/**"]` || rn["disallowed-tools"] != `"Write Edit"` || rn["arguments"] != `["version"]` {
		t.Errorf("release-notes extensions = %v", rn)
	}
	if got := ext("openhands/github-triage")["triggers"]; got != `["github","issue triage"]` {
		t.Errorf("triggers = %s", got)
	}
	if got, want := ext("openclaw/todo-sync"), map[string]string{
		"version": `"1.0.0"`, "homepage": `"https://example.com/todo-sync"`,
		"metadata.openclaw": `{"emoji":"✅","requires":{"env":["TODO_API_KEY"],"bins":["curl"]},"primaryEnv":"TODO_API_KEY"}`,
	}; !reflect.DeepEqual(got, want) {
		t.Errorf("todo-sync extensions = %v, want %v", got, want)
	}
	if s, _ := cat.Lookup("openclaw/todo-sync"); !reflect.DeepEqual(s.Metadata, map[string]string{"author": "pablo-tests"}) {
		t.Errorf("todo-sync metadata = %v: the flat entries stay the specification's metadata", s.Metadata)
	}
	if got, want := ext("openclaw/market-quotes"), map[string]string{
		"metadata.clawdbot": `{"emoji":"📊","os":["darwin","linux"],"requires":{"bins":["python3"]}}`,
	}; !reflect.DeepEqual(got, want) {
		t.Errorf("market-quotes extensions = %v, want %v", got, want)
	}
	if s, _ := cat.Lookup("openclaw/market-quotes"); s.Metadata != nil {
		t.Errorf("market-quotes metadata = %v, want none", s.Metadata)
	}
	if len(ext("agent-skills/pdf-forms")) != 0 || len(ext("codex/lint-fixer")) != 0 {
		t.Error("spec-only packages have extensions")
	}
	s, _ := cat.Lookup("claude-code/commit-helper")
	if want := []string{"Bash(git diff --staged)", "Bash(git commit *)", "Read"}; !reflect.DeepEqual(s.AllowedTools, want) {
		t.Errorf("allowed-tools sequence = %q, want %q", s.AllowedTools, want)
	}
	s, _ = cat.Lookup("claude-code/release-notes")
	if want := []string{"Read", "Grep", "Bash(git log *)"}; !reflect.DeepEqual(s.AllowedTools, want) {
		t.Errorf("allowed-tools flow sequence = %q, want %q", s.AllowedTools, want)
	}
}

// TestAllowedToolsInFrontmatterGrantNothing: however allowed-tools is
// written, Validate reports each entry the task does not admit; declaring a
// tool never admits it.
func TestAllowedToolsInFrontmatterGrantNothing(t *testing.T) {
	t.Parallel()
	for _, src := range [][]byte{
		fm("name: a", "description: d", "allowed-tools: fs.write shell.run"),
		fm("name: a", "description: d", "allowed-tools:", "  - fs.write", "  - shell.run"),
		fm("name: a", "description: d", "allowed-tools: [fs.write, shell.run]", "user-invocable: true"),
	} {
		f, err := ParseFrontmatter(src)
		must(t, err)
		s := Skill{Root: "r", Frontmatter: f}
		admitted := func(id string) bool { return id == "fs.read" }
		var denied []string
		for _, finding := range Validate(s, admitted, nil) {
			if finding.Code == CodeToolNotAdmitted {
				denied = append(denied, finding.Reason)
			}
		}
		if len(denied) != 2 || !strings.Contains(denied[0], `"fs.write"`) || !strings.Contains(denied[1], `"shell.run"`) {
			t.Fatalf("%q: findings %v", src, denied)
		}
	}
}

func TestExtensionValues(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  []byte
		want map[string]string
	}{
		{"scalars stay strings", fm("name: a", "description: d", "user-invocable: false", "model: 1.0", "effort: ~"),
			map[string]string{"user-invocable": `"false"`, "model": `"1.0"`, "effort": `"~"`}},
		{"hint as a flow list", fm("name: a", "description: d", "argument-hint: [issue-number]"),
			map[string]string{"argument-hint": `["issue-number"]`}},
		{"hint as a string", fm("name: a", "description: d", `argument-hint: "[issue] [--fast]"`),
			map[string]string{"argument-hint": `"[issue] [--fast]"`}},
		{"hooks keep written order", fm("name: a", "description: d", "hooks:", "  Stop:", "    - type: command", "      command: x", "  A: {b: c}"),
			map[string]string{"hooks": `{"Stop":[{"type":"command","command":"x"}],"A":{"b":"c"}}`}},
		{"json-escaped", fm("name: a", "description: d", `when_to_use: "say \"now\" <b>"`),
			map[string]string{"when_to_use": `"say \"now\" \u003cb\u003e"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := ParseFrontmatter(tt.src)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for k, v := range f.Extensions {
				got[k] = string(v)
				if !json.Valid(v) {
					t.Errorf("%s is not JSON: %s", k, v)
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestExtensionsKeepTheStrictness(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		src    []byte
		code   Code
		reason string
	}{
		{"list for a string key", fm("name: a", "description: d", "model:", "  - haiku"), CodeUnsupportedYAML, "sequences"},
		{"mapping for a list key", fm("name: a", "description: d", "paths:", "  a: b"), CodeUnsupportedYAML, "nested mappings"},
		{"mapping inside a list", fm("name: a", "description: d", "triggers:", "  - a: b"), CodeUnsupportedYAML, "string"},
		{"anchor in hooks", fm("name: a", "description: d", "hooks:", "  Stop: &s x"), CodeUnsupportedYAML, "anchors"},
		{"alias in hooks", fm("name: a", "description: d", "hooks:", "  Stop: x", "  Go: *s"), CodeUnsupportedYAML, "aliases"},
		{"tag in a list", fm("name: a", "description: d", "allowed-tools: [!!str Read]"), CodeUnsupportedYAML, "tags"},
		{"bare tag", fm("name: a", "description: ! d"), CodeUnsupportedYAML, "tags"},
		{"merge key", fm("name: a", "description: d", "hooks:", "  <<: {a: b}"), CodeUnsupportedYAML, "merge keys"},
		{"duplicate key in hooks", fm("name: a", "description: d", "hooks:", "  Stop: x", "  Stop: y"), CodeDuplicateKey, `"Stop"`},
		{"duplicate extension key", fm("name: a", "description: d", "model: a", "model: b"), CodeDuplicateKey, `"model"`},
		{"explicit key in hooks", fm("name: a", "description: d", "hooks:", "  ? Stop", "  : x"), CodeUnsupportedYAML, "complex keys"},
		{"control character", fm("name: a", "description: d", `model: "a\u0007"`), CodeInvalidExtension, "control character"},
		{"empty allowed-tools entry", fm("name: a", "description: d", "allowed-tools:", "  - Read", "  - ''"), CodeInvalidAllowedTools, "empty"},
		{"multi-line allowed-tools entry", fm("name: a", "description: d", "allowed-tools:", "  - |", "    a", "    b"), CodeInvalidAllowedTools, "one line"},
		{"document start with text", fm("name: a", "description: d", "--- x"), CodeUnsupportedYAML, "documents"},
		{"indented delimiter line", fm("name: a", "description: |", "  text", "  ---", "  more"), CodeUnsupportedYAML, "other readers"},
		{"indented mapping", fm(" name: a", " description: d"), CodeInvalidYAML, "indentation"},
		{"misspelt key", fm("name: a", "description: d", "user-invokable: true"), CodeUnknownKey, `"user-invokable"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseFrontmatter(tt.src)
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, ErrInvalidFrontmatter) {
				t.Fatalf("want *Error of kind ErrInvalidFrontmatter, got %v", err)
			}
			if e.Code != tt.code || !strings.Contains(e.Reason, tt.reason) {
				t.Fatalf("got code %s reason %q; want %s containing %q", e.Code, e.Reason, tt.code, tt.reason)
			}
		})
	}
}

func TestUnknownKeyNamesEveryAcceptedKey(t *testing.T) {
	t.Parallel()
	_, err := ParseFrontmatter(fm("name: a", "description: d", "category: tools"))
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeUnknownKey {
		t.Fatalf("got %v", err)
	}
	for _, k := range append([]string{"allowed-tools", "metadata"}, ExtensionKeys()...) {
		if !strings.Contains(e.Reason, k) {
			t.Errorf("reason %q does not name %s", e.Reason, k)
		}
	}
}

func TestExtensionKeysAreSortedAndShaped(t *testing.T) {
	t.Parallel()
	keys := ExtensionKeys()
	if !slices.IsSorted(keys) || len(slices.Compact(slices.Clone(keys))) != len(keys) {
		t.Fatalf("keys not sorted and unique: %v", keys)
	}
	for _, k := range keys {
		if _, ok := extensionShapeOf(k); !ok || topLevelKey(k) != true {
			t.Errorf("%s has no shape", k)
		}
	}
	keys[0] = "changed"
	if ExtensionKeys()[0] == "changed" {
		t.Fatal("ExtensionKeys shares its result")
	}
}

func TestSkillsAreClonedWithTheirExtensions(t *testing.T) {
	t.Parallel()
	f, err := ParseFrontmatter(fm("name: a", "description: d", "model: haiku"))
	must(t, err)
	c := f.clone()
	c.Extensions["model"][1] = 'X'
	if string(f.Extensions["model"]) != `"haiku"` {
		t.Fatalf("clone shares the extension bytes: %s", f.Extensions["model"])
	}
}
