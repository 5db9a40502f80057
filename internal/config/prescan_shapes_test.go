package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// shape is a document that grows one dimension of the TOML decoder's cost.
type shape struct {
	name string
	doc  func(size int) string
	// limit is what the reason names when the pre-scan refuses the
	// document; empty when the decoder decides it (its own nesting bound)
	// or the document loads.
	limit string
}

// repeatTo fills size bytes: head, then unit as often as fits, then tail.
func repeatTo(size int, head, unit, tail string) string {
	n := (size - len(head) - len(tail)) / len(unit)
	return head + strings.Repeat(unit, max(n, 0)) + tail
}

// nestTo nests open/close pairs around a value as deep as fits in size
// bytes, or at most depth levels, then pads the rest with a comment.
func nestTo(size, depth int, head, open, value, close string) string {
	n := min(depth, (size-len(head)-len(value)-1)/(len(open)+len(close)))
	doc := head + strings.Repeat(open, n) + value + strings.Repeat(close, n) + "\n"
	if pad := size - len(doc) - 2; pad > 0 {
		doc += "#" + strings.Repeat("x", pad) + "\n"
	}
	return doc
}

// linesTo writes line(i) for i = 0, 1, ... while they fit in size bytes.
func linesTo(size int, line func(i int) string) string {
	var b strings.Builder
	for i := 0; ; i++ {
		l := line(i)
		if b.Len()+len(l) > size {
			return b.String()
		}
		b.WriteString(l)
	}
}

// adversarialShapes are the TOML shapes whose decoding cost grows faster
// than their size, or that come nearest the bounds.
func adversarialShapes() []shape {
	long := strings.Repeat(strings.Repeat("p", 28)+".", 30)
	return []shape{
		{"a dotted key of many parts", func(n int) string { return repeatTo(n, "", "a.", "b = 1\n") }, "32 levels"},
		{"a table header of many parts", func(n int) string { return repeatTo(n, "[", "a.", "b]\n") }, "32 levels"},
		{"an array-of-tables header of many parts", func(n int) string { return repeatTo(n, "[[", "a.", "b]]\n") }, "32 levels"},
		{"a dotted key of many parts in an inline table", func(n int) string { return repeatTo(n, "x = {", "a.", "b = 1}\n") }, "32 levels"},
		{"inline tables nested within the parser's bound", func(n int) string { return nestTo(n, 9000, "x = ", "{a = ", "1", "}") }, "32 levels"},
		{"arrays nested within the parser's bound", func(n int) string { return nestTo(n, 9000, "x = ", "[", "1", "]") }, "32 levels"},
		{"inline tables and arrays nested past the parser's bound", func(n int) string { return nestTo(n, n, "x = ", "[{a = ", "1", "}]") }, ""},
		{"many keys in one inline table", func(n int) string {
			return linesTo(n-2, func(i int) string {
				if i == 0 {
					return "x = {k0 = 1"
				}
				return fmt.Sprintf(", k%d = 1", i)
			}) + "}\n"
		}, "256 keys"},
		{"an array of tables repeated", func(n int) string { return repeatTo(n, "", "[[a]]\n", "") }, "1024 elements"},
		{"a long array", func(n int) string { return repeatTo(n, "x = [", "1,", "1]\n") }, "1024 elements"},
		{"many dotted table headers", func(n int) string {
			return linesTo(n, func(i int) string { return fmt.Sprintf("[%sb%d]\n", strings.Repeat("a.", 30), i) })
		}, "256 keys"},
		{"many dotted keys of many parts", func(n int) string {
			return linesTo(n, func(i int) string { return fmt.Sprintf("%sb%d = 1\n", strings.Repeat("a.", 30), i) })
		}, "256 keys"},
		{"one long key", func(n int) string { return repeatTo(n, "", "a", " = 1\n") }, "1024 bytes"},
		{"long table names with many keys", func(n int) string {
			return linesTo(n, func(i int) string {
				if i%251 == 0 {
					return fmt.Sprintf("[%sq%d]\n", long, i)
				}
				return fmt.Sprintf("k%d = 1\n", i%251)
			})
		}, "256 keys"},
		{"a string of escapes", func(n int) string {
			return repeatTo(n, "schema_version = 1\n[options.run]\ninstructions = \"", `\u0041`, "\"\n")
		}, ""},
		{"many tables under many parents", func(int) string { return deepProfiles(64) }, "lookup steps"},
		{"a quoted key holding many dots", func(n int) string { return repeatTo(n, `"`, "a.", `b" = 1`+"\n") }, "1024 bytes"},
		{"a dotted key of many quoted parts", func(n int) string { return repeatTo(n, "", `"a" . `, "b = 1\n") }, "32 levels"},
		{"many quoted non-ASCII keys", func(n int) string {
			return linesTo(n, func(i int) string { return fmt.Sprintf("\"ключ.%d\" = 1\n", i) })
		}, "256 keys"},
		{"an array of many inline tables", func(n int) string { return repeatTo(n, "x = [", "{a = 1}, ", "{a = 1}]\n") }, "1024 elements"},
		{"a multi-line string of line continuations", func(n int) string {
			return repeatTo(n, "schema_version = 1\n[options.run]\ninstructions = \"\"\"\n", "line \\\n  more\n", "\"\"\"\n")
		}, ""},
		{"a comment on every line", func(n int) string { return repeatTo(n, "schema_version = 1\n", "# a comment\n", "") }, ""},
	}
}

// TestTOMLKeyPartsAndNestingAreBoundedBeforeDecoding: every shape that
// grows the decoder's cost faster than its size (a dotted key or header of
// many parts, quoted or not, deep inline tables and arrays, wide tables,
// long arrays of tables or inline tables, long keys, long strings of
// escapes or line continuations, comments) fails with a typed error or
// loads when written at the 1 MiB cap. The bound is shown as work: where
// the pre-scan refuses, the quadratic decoder never runs, and the
// pre-scan's own steps (key parts and elements visited, key bytes hashed)
// are at most twice the document's size; the reason names the limit and
// the key's line.
func TestTOMLKeyPartsAndNestingAreBoundedBeforeDecoding(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	os.Mkdir(ws, 0o700)
	for i, sh := range adversarialShapes() {
		t.Run(sh.name, func(t *testing.T) {
			doc := []byte(sh.doc(maxFileBytes))
			if len(doc) > maxFileBytes || len(doc) < 300<<10 {
				t.Fatalf("the document is %d bytes", len(doc))
			}
			_, work, perr := prescanWork(doc)
			if work > 2*int64(len(doc)) {
				t.Errorf("the pre-scan took %d steps over %d bytes", work, len(doc))
			}
			if sh.limit != "" {
				if perr == nil || perr.Code != CodeLimit || !strings.Contains(perr.Message, sh.limit) || perr.Line < 1 {
					t.Fatalf("pre-scan: %v; want config_limit naming %q at a line", perr, sh.limit)
				}
			} else if perr != nil {
				t.Fatalf("pre-scan refused %v; the decoder decides this shape", perr)
			}
			p := filepath.Join(dir, fmt.Sprintf("shape%d.toml", i))
			if err := os.WriteFile(p, doc, 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Load(LoadOptions{Config: p, Bindings: map[string]string{"workspace": ws}})
			var ce *Error
			if err != nil && (!errors.As(err, &ce) || !strings.HasPrefix(string(ce.Code), "config_")) {
				t.Fatalf("untyped: %v", err)
			}
			if sh.limit != "" && (ce == nil || ce.Code != CodeLimit || ce.Line != perr.Line || ce.Source == "") {
				t.Fatalf("Load: %v; want the pre-scan's %v", err, perr)
			}
		})
	}
}

// TestPrescanRefusesTheFirstPartPastTheBound: a key of exactly
// maxNesting parts, and a path of exactly maxKeyBytes bytes, pass; one
// more part or byte is config_limit, with the key's line.
func TestPrescanRefusesTheFirstPartPastTheBound(t *testing.T) {
	t.Parallel()
	at := func(parts int) string { return strings.TrimSuffix(strings.Repeat("a.", parts), ".") + " = 1\n" }
	if _, err := prescan([]byte(at(maxNesting))); err != nil {
		t.Errorf("%d parts: %v", maxNesting, err)
	}
	if _, err := prescan([]byte("# one\n\n" + at(maxNesting+1))); err == nil || err.Line != 3 || !strings.Contains(err.Message, "deeper than 32 levels") {
		t.Errorf("%d parts: %v", maxNesting+1, err)
	}
	// [t] + x = {...}: the table and key are two levels, each inline
	// table one more.
	inline := func(levels int) string {
		return "[t]\nx = " + strings.Repeat("{a = ", levels) + "1" + strings.Repeat("}", levels) + "\n"
	}
	if _, err := prescan([]byte(inline(maxNesting - 2))); err != nil {
		t.Errorf("inline at the bound: %v", err)
	}
	if _, err := prescan([]byte(inline(maxNesting - 1))); err == nil || err.Line != 2 {
		t.Errorf("inline past the bound: %v", err)
	}
	// A path's bytes: "/k" and each part with its separator.
	key := func(n int) string { return "[t]\n" + strings.Repeat("k", n-2-1) + " = 1\n" }
	if _, err := prescan([]byte(key(maxKeyBytes))); err != nil {
		t.Errorf("%d bytes: %v", maxKeyBytes, err)
	}
	if _, err := prescan([]byte(key(maxKeyBytes + 1))); err == nil || err.Line != 2 || !strings.Contains(err.Message, "longer than 1024 bytes") {
		t.Errorf("%d bytes: %v", maxKeyBytes+1, err)
	}
}

// BenchmarkLoadAdversarialShapes: loading each shape at the 1 MiB cap
// (TestTOMLKeyPartsAndNestingAreBoundedBeforeDecoding asserts the work).
func BenchmarkLoadAdversarialShapes(b *testing.B) {
	dir := b.TempDir()
	ws := filepath.Join(dir, "ws")
	os.Mkdir(ws, 0o700)
	for i, sh := range adversarialShapes() {
		p := filepath.Join(dir, fmt.Sprintf("shape%d.toml", i))
		doc := sh.doc(maxFileBytes)
		if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
			b.Fatal(err)
		}
		b.Run(strings.ReplaceAll(sh.name, " ", "_"), func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			for b.Loop() {
				Load(LoadOptions{Config: p, Bindings: map[string]string{"workspace": ws}})
			}
		})
	}
}
