package pablo

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestAFigureBesideTheReferenceNamesItsMethod defends the rule that the
// README sets a figure beside the reference's only when it was taken by
// the reference's method: every row of the Performance table with a
// Reference figure names, in its Benchmark column, at least one harness
// command that exists: a benchmark in the package it names, or a script
// of scripts/; and each says, in its doc or header comment, which of the
// reference's methods it follows ("the reference's … method"). A row that
// compares an in-process shortcut with the reference's loopback provider
// cannot name its method, and fails.
func TestAFigureBesideTheReferenceNamesItsMethod(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := performanceRows(string(readme))
	if err != nil {
		t.Fatal(err)
	}
	compared := 0
	for _, r := range rows {
		if r.reference == "—" || r.reference == "" {
			continue
		}
		compared++
		benches, scripts := benchmarksNamed(r.command), scriptsNamed(r.command)
		if len(benches)+len(scripts) == 0 {
			t.Errorf("README Performance row %q sets %q beside the reference but names no harness (`./DIR BenchmarkName` or `scripts/NAME.sh`) in %q: name the command that took it", r.what, r.reference, r.command)
			continue
		}
		for _, s := range scripts {
			src, err := os.ReadFile(s)
			if err != nil {
				t.Errorf("README Performance row %q names %s, which does not exist: %v", r.what, s, err)
				continue
			}
			if !referenceMethod.MatchString(leadingComment(string(src))) {
				t.Errorf("README Performance row %q sets %q beside the reference, but %s's header comment does not say it follows the reference's method", r.what, r.reference, s)
			}
		}
		for _, b := range benches {
			doc, err := benchmarkDoc(b.dir, b.name)
			if err != nil {
				t.Errorf("README Performance row %q: %v", r.what, err)
				continue
			}
			if !referenceMethod.MatchString(doc) {
				t.Errorf("README Performance row %q sets %q beside the reference, but %s %s does not say which of the reference's methods it follows (its doc comment needs \"the reference's … method\"); measure it by that method (internal/measure, scripts/measure.sh) or set \"—\" in the Reference column", r.what, r.reference, b.dir, b.name)
			}
		}
	}
	if compared == 0 {
		t.Fatal("the README's Performance table has no row with a Reference figure: the test reads the wrong table")
	}
}

// referenceMethod is how a benchmark's doc comment names the method it
// follows: "the reference's method", "the reference's trace-overhead
// method", "by the reference's core-run method".
var referenceMethod = regexp.MustCompile(`(?i)\breference's\s+(?:[\w-]+\s+){0,3}method\b`)

type performanceRow struct{ what, command, figure, reference string }

// performanceRows reads the four-column table of the README's Performance
// section.
func performanceRows(readme string) ([]performanceRow, error) {
	_, section, ok := strings.Cut(readme, "\n## Performance\n")
	if !ok {
		return nil, fmt.Errorf("the README has no ## Performance section")
	}
	if i := strings.Index(section, "\n## "); i >= 0 {
		section = section[:i]
	}
	var rows []performanceRow
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| What |") {
			continue
		}
		cells := strings.Split(line, " | ")
		if len(cells) != 4 {
			return nil, fmt.Errorf("a Performance row has %d cells, want 4 (What, Benchmark, Figure, Reference; a | inside a cell breaks the table): %.120s", len(cells), line)
		}
		rows = append(rows, performanceRow{
			what:      strings.TrimPrefix(cells[0], "| "),
			command:   cells[1],
			figure:    cells[2],
			reference: strings.TrimSpace(strings.TrimSuffix(cells[3], "|")),
		})
	}
	return rows, nil
}

type benchRef struct{ dir, name string }

// benchCommand is one benchmark a Benchmark cell names: `BenchmarkX` (the
// root package) or `./DIR BenchmarkX`, a sub-benchmark's /NAME allowed.
var benchCommand = regexp.MustCompile("`(?:(\\./[\\w./-]+) )?(Benchmark\\w+)[^`]*`")

func benchmarksNamed(cell string) []benchRef {
	var out []benchRef
	for _, m := range benchCommand.FindAllStringSubmatch(cell, -1) {
		dir := m[1]
		if dir == "" {
			dir = "."
		}
		out = append(out, benchRef{dir: dir, name: m[2]})
	}
	return out
}

// scriptCommand is a script of the repository a Benchmark cell names.
var scriptCommand = regexp.MustCompile("`(?:bash |sh )?(scripts/[\\w.-]+\\.sh)\\b[^`]*`")

func scriptsNamed(cell string) []string {
	var out []string
	for _, m := range scriptCommand.FindAllStringSubmatch(cell, -1) {
		out = append(out, m[1])
	}
	return out
}

// leadingComment is a script's first block of # comment lines, joined.
func leadingComment(src string) string {
	var doc []string
	for _, l := range strings.Split(src, "\n") {
		if strings.HasPrefix(l, "#!") {
			continue
		}
		if !strings.HasPrefix(l, "#") {
			break
		}
		doc = append(doc, strings.TrimSpace(strings.TrimPrefix(l, "#")))
	}
	return strings.Join(doc, " ")
}

// benchmarkDoc is the doc comment of func name(b *testing.B) in dir's
// test files.
func benchmarkDoc(dir, name string) (string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil || len(files) == 0 {
		return "", fmt.Errorf("%s holds no test files (is the directory right?)", dir)
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		lines := strings.Split(string(src), "\n")
		for i, l := range lines {
			if !strings.HasPrefix(l, "func "+name+"(") {
				continue
			}
			var doc []string
			for j := i - 1; j >= 0 && strings.HasPrefix(lines[j], "//"); j-- {
				doc = append([]string{strings.TrimSpace(strings.TrimPrefix(lines[j], "//"))}, doc...)
			}
			return strings.Join(doc, " "), nil
		}
	}
	return "", fmt.Errorf("no benchmark %s in %s: the command it names does not exist", name, dir)
}
