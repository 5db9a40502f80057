package pablo_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadmeGoBlocksAreQuotedFromExamples: every Go block of the README is a
// run of lines from the body of an Example function, so a snippet a user
// pastes is code that compiles and runs (go test runs the Examples).
func TestReadmeGoBlocksAreQuotedFromExamples(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := goBlocks(string(readme))
	if len(blocks) == 0 {
		t.Fatal("the README has no Go block; this test would check nothing")
	}
	bodies := exampleBodies(t)
	for i, block := range blocks {
		want := normalizedLines(block)
		found := false
		for _, body := range bodies {
			if containsRun(body, want) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("README Go block %d is not quoted from any Example body:\n%s", i+1, block)
		}
	}
}

// goBlocks returns the text of each fenced ```go block.
func goBlocks(md string) []string {
	var out []string
	for {
		start := strings.Index(md, "```go\n")
		if start < 0 {
			return out
		}
		md = md[start+len("```go\n"):]
		end := strings.Index(md, "```")
		if end < 0 {
			return out
		}
		out = append(out, md[:end])
		md = md[end+3:]
	}
}

// exampleBodies returns the normalized body lines of every Example function
// in this package's tests.
func exampleBodies(t *testing.T) [][]string {
	t.Helper()
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	var out [][]string
	fset := token.NewFileSet()
	for _, name := range files {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil || !strings.HasPrefix(fn.Name.Name, "Example") {
				continue
			}
			body := src[fset.Position(fn.Body.Lbrace).Offset+1 : fset.Position(fn.Body.Rbrace).Offset]
			out = append(out, normalizedLines(string(body)))
		}
	}
	return out
}

// normalizedLines drops indentation and blank lines.
func normalizedLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

func containsRun(body, run []string) bool {
	for i := 0; i+len(run) <= len(body); i++ {
		match := true
		for j := range run {
			if body[i+j] != run[j] {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}
