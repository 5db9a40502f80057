package skills

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"
)

// FuzzFrontmatter checks that any input either parses into values within
// every limit or fails with a typed error, and that reading incrementally in
// one-byte steps finds the same frontmatter as reading at once.
func FuzzFrontmatter(f *testing.F) {
	paths, _ := filepath.Glob("testdata/*/*/*/SKILL.md")
	for _, p := range paths {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	for _, s := range []string{
		"name: a\ndescription: '\n  x\n\n  y'\nmetadata:\n  \"k\": \"\\u00e9\\x41\"\n",
		"name: a\ndescription: |2-\n    x\n  y\nallowed-tools: a b\n",
		"---\nname: a\ndescription: |\n  x\n\n  y\n---\n",
		"---\nname: a\ndescription: >+\n  x\n   y\n\n---\n",
		"---\nname: a\ndescription: \"a\\\n  b\"\nmetadata:\n  k: 'v'\n---\n",
		"---\r\nname: a\r\ndescription: d\r\n---",
		"---\nname: a\ndescription: d\nallowed-tools:\n  - Read\n  - Bash(git diff *)\nargument-hint: [file]\nhooks:\n  PreToolUse:\n    - matcher: Bash\n      hooks: [{type: command}]\n---\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		raw1, _, err1 := readFrontmatter(bytes.NewReader(data))
		raw2, _, err2 := readFrontmatter(iotest.OneByteReader(bytes.NewReader(data)))
		if !bytes.Equal(raw1, raw2) || CodeOf(err1) != CodeOf(err2) {
			t.Fatalf("incremental read differs: %q/%v vs %q/%v", raw1, err1, raw2, err2)
		}
		if len(raw1) > MaxFrontmatterBytes {
			t.Fatalf("frontmatter of %d bytes accepted", len(raw1))
		}
		checkFrontmatter(t, data)
		// Most mutations break the opening delimiter; also treat the input
		// as the YAML between delimiters so the parser itself is explored.
		checkFrontmatter(t, append(append([]byte("---\n"), data...), "\n---\n"...))
	})
}

// checkFrontmatter asserts ParseFrontmatter's contract on one input.
func checkFrontmatter(t *testing.T, data []byte) {
	fm, err := ParseFrontmatter(data)
	if err != nil {
		var e *Error
		if !errors.As(err, &e) || e.Code == "" || e.Reason == "" || e.Kind == nil || !errors.Is(err, e.Kind) {
			t.Fatalf("untyped error %#v", err)
		}
		return
	}
	if reason := nameProblem(fm.Name); reason != "" {
		t.Fatalf("accepted bad name: %s", reason)
	}
	if n := utf8.RuneCountInString(fm.Description); n < 1 || n > MaxDescriptionChars {
		t.Fatalf("description of %d characters accepted", n)
	}
	if n := utf8.RuneCountInString(fm.Compatibility); n > MaxCompatibilityChars {
		t.Fatalf("compatibility of %d characters accepted", n)
	}
	if len(fm.Metadata) > MaxMetadataPairs {
		t.Fatalf("%d metadata pairs accepted", len(fm.Metadata))
	}
	all := []string{fm.Name, fm.Description, fm.License, fm.Compatibility}
	for k, v := range fm.Metadata {
		if k == "" || len(k) > MaxMetadataKeyBytes || len(v) > MaxMetadataValueBytes {
			t.Fatalf("metadata %q=%q accepted", k, v)
		}
		all = append(all, k, v)
	}
	all = append(all, fm.AllowedTools...)
	for _, s := range all {
		if !utf8.ValidString(s) || hasControl(s) {
			t.Fatalf("value %q accepted", s)
		}
	}
	for _, tool := range fm.AllowedTools {
		if tool == "" || strings.TrimSpace(tool) != tool || strings.Contains(tool, "\n") {
			t.Fatalf("tool %q accepted", tool)
		}
	}
	for k, v := range fm.Extensions {
		_, known := extensionShapeOf(k)
		if sub, ok := strings.CutPrefix(k, "metadata."); ok {
			known = openClawMetadataKey(sub)
		}
		if !known || !json.Valid(v) {
			t.Fatalf("extension %q=%s accepted", k, v)
		}
		var tree any
		if err := json.Unmarshal(v, &tree); err != nil || !onlyStrings(tree) {
			t.Fatalf("extension %q=%s holds a value that is not a string", k, v)
		}
	}
	again, err := ParseFrontmatter(data)
	if err != nil || !reflect.DeepEqual(fm, again) {
		t.Fatal("parse is not deterministic")
	}
}

// onlyStrings reports whether every leaf of a decoded JSON value is a
// string without control characters.
func onlyStrings(v any) bool {
	switch v := v.(type) {
	case string:
		return !hasControl(v)
	case []any:
		for _, e := range v {
			if !onlyStrings(e) {
				return false
			}
		}
		return true
	case map[string]any:
		for k, e := range v {
			if hasControl(k) || !onlyStrings(e) {
				return false
			}
		}
		return true
	}
	return false
}

// FuzzParseReadArguments checks that accepted skill.read arguments always
// satisfy the schema's bounds.
func FuzzParseReadArguments(f *testing.F) {
	for _, s := range []string{
		`{"skill":"r/a","path":"x.md"}`,
		`{"skill":"r/a","path":"x.md","max_bytes":5}`,
		`{"skill":"r/a","path":"../x","max_bytes":1.0}`,
		`{"skill":"r/a","path":"a\\b"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		args, err := ParseReadArguments(data)
		if err != nil {
			if !errors.Is(err, ErrInvalidArguments) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if len(args.Skill) < 1 || len(args.Skill) > MaxReadSkillBytes || args.Path == "" ||
			strings.ContainsRune(args.Skill+args.Path, 0) ||
			args.MaxBytes != nil && (*args.MaxBytes < 1 || *args.MaxBytes > MaxResourceBytes) {
			t.Fatalf("accepted %+v", args)
		}
		if checkResourcePath(args.Path) == "" {
			for _, c := range strings.Split(args.Path, "/") {
				if c == ".." || c == "." || c == "" || strings.Contains(c, `\`) {
					t.Fatalf("path %q accepted", args.Path)
				}
			}
			if strings.HasPrefix(args.Path, "/") {
				t.Fatalf("absolute path %q accepted", args.Path)
			}
		}
	})
}

// FuzzArchive checks that any archive bytes, read as a .tar.gz or a .zip,
// either fail with one typed error of this package or give a package
// within every bound: clean relative paths, regular files only, SKILL.md
// at its root.
func FuzzArchive(f *testing.F) {
	skill := "---\nname: review\ndescription: d\n---\nx\n"
	f.Add(tarGz(f, tarEntry{name: "review/", typ: tar.TypeDir}, tarEntry{name: "review/SKILL.md", body: skill}, tarEntry{name: "review/a/b.md", body: "b"}), false)
	f.Add(tarGz(f, tarEntry{name: "SKILL.md", body: skill}, tarEntry{name: "../evil", body: "x"}), false)
	f.Add(tarGz(f, tarEntry{name: "SKILL.md", body: skill}, tarEntry{name: "l", typ: tar.TypeSymlink, link: "/"}), false)
	f.Add(zipOf(f, zipEntry{name: "SKILL.md", body: skill}, zipEntry{name: "docs/x.md", body: "x"}), true)
	f.Add(zipOf(f, zipEntry{name: "SKILL.md", body: skill}, zipEntry{name: "/abs", body: "x"}), true)
	f.Add([]byte{}, false)
	f.Add([]byte{}, true)
	f.Fuzz(func(t *testing.T, data []byte, isZip bool) {
		format := ArchiveTarGzip
		if isZip {
			format = ArchiveZip
		}
		tr, err := readArchive(data, format)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Code == "" {
				t.Fatalf("untyped error %T: %v", err, err)
			}
			for _, k := range []error{ErrInvalidPackage, ErrUnsafePath, ErrLimitExceeded} {
				if errors.Is(err, k) {
					return
				}
			}
			t.Fatalf("error of an unexpected kind: %v", err)
		}
		if _, ok := tr.files[SkillFile]; !ok {
			t.Fatal("a package without SKILL.md was accepted")
		}
		var total int
		for p, b := range tr.files {
			if reason := checkResourcePath(p); reason != "" {
				t.Fatalf("path %q: %s", p, reason)
			}
			if len(b) > MaxPackageFileBytes {
				t.Fatalf("file %q has %d bytes", p, len(b))
			}
			total += len(b)
		}
		if total > MaxPackageBytes || len(tr.files)+len(tr.dirs) > MaxPackageEntries {
			t.Fatalf("%d bytes in %d entries", total, len(tr.files)+len(tr.dirs))
		}
	})
}

// FuzzShapeConflict: any two JSON documents, as a contract and a task's
// output schema, are compared without a panic, and a schema never
// conflicts with itself.
func FuzzShapeConflict(f *testing.F) {
	f.Add([]byte(`{"type":"object","required":["a"],"properties":{"a":{"type":"array","items":{"type":"integer"}}}}`), []byte(`{"type":"object","required":["a","b"]}`))
	f.Add([]byte(`{"type":["string","null"],"required":7,"properties":[]}`), []byte(`{"type":"object","properties":{"a":null}}`))
	f.Fuzz(func(t *testing.T, contract, task []byte) {
		var c, k map[string]any
		if json.Unmarshal(contract, &c) != nil || json.Unmarshal(task, &k) != nil {
			return
		}
		shapeConflict(c, k, "", 0)
		if why := shapeConflict(k, k, "", 0); why != "" {
			t.Fatalf("a schema conflicts with itself: %s", why)
		}
	})
}
