package pablo

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// architectureDoc is where the import direction is written; the test reads
// its two tables, so the doc and the code cannot drift apart.
const architectureDoc = "docs/architecture.md"

// importLayer is one row of the doc's layer table: the packages its
// patterns match and the patterns they may import.
type importLayer struct {
	name     string
	packages []string
	imports  []string
}

// importException is one row of the doc's exception table: a package that
// may also import what a lower layer may not, and why.
type importException struct {
	pkg     string
	imports []string
	why     string
	used    bool
}

// TestImportDirectionMatchesArchitectureDoc checks every non-test import
// edge between the module's packages, as `go list` reports them, against the
// layers and the documented exceptions of docs/architecture.md.
func TestImportDirectionMatchesArchitectureDoc(t *testing.T) {
	doc, err := os.ReadFile(architectureDoc)
	if err != nil {
		t.Fatal(err)
	}
	layers, err := parseImportLayers(doc)
	if err != nil {
		t.Fatal(err)
	}
	exceptions, err := parseImportExceptions(doc)
	if err != nil {
		t.Fatal(err)
	}
	module, edges := goListImports(t)

	// The doc itself must state one direction: a layer imports only what its
	// own row and the rows above it hold.
	for i, l := range layers {
		for _, imp := range l.imports {
			if !slices.ContainsFunc(layers[:i+1], func(m importLayer) bool { return slices.Contains(m.packages, imp) }) {
				t.Errorf("%s: layer %q may import %q, which no row at or above it holds: the table must point one way", architectureDoc, l.name, imp)
			}
		}
	}
	for _, e := range exceptions {
		for _, imp := range e.imports {
			if imp == "." || matchPattern("examples/...", imp) {
				t.Errorf("%s: the exception for %s names %q: no package below the root may import the root or an example", architectureDoc, e.pkg, imp)
			}
		}
	}

	pkgs := make([]string, 0, len(edges))
	for p := range edges {
		pkgs = append(pkgs, p)
	}
	slices.Sort(pkgs)
	for _, p := range pkgs {
		rel := relPath(module, p)
		l := layerOf(layers, rel)
		if l == nil {
			t.Errorf("package %s is in no layer of %s: add its pattern to a row of the layer table", rel, architectureDoc)
			continue
		}
		for _, imp := range edges[p] {
			if imp != module && !strings.HasPrefix(imp, module+"/") {
				continue
			}
			to := relPath(module, imp)
			if matchAny(l.imports, to) {
				continue
			}
			if e := exceptionFor(exceptions, rel, to); e != nil {
				e.used = true
				continue
			}
			t.Errorf("%s (layer %s) imports %s, against the direction in %s: move the code, or add a row to its exception table saying why", rel, l.name, to, architectureDoc)
		}
	}
	// The package table is the picture a reader finds their way by: every
	// package has a row ("pablo" is the root).
	rows, err := docTable(doc, "packages")
	if err != nil {
		t.Fatal(err)
	}
	var described []string
	for _, r := range rows {
		for _, p := range patternsIn(r[0]) {
			if p == "pablo" {
				p = "."
			}
			described = append(described, p)
		}
	}
	for _, p := range pkgs {
		if rel := relPath(module, p); !matchAny(described, rel) {
			t.Errorf("package %s has no row in the package table of %s: add one saying what it holds", rel, architectureDoc)
		}
	}

	for _, e := range exceptions {
		if !e.used {
			t.Logf("%s: the exception for %s (%s) is not used by any import today", architectureDoc, e.pkg, strings.Join(e.imports, ", "))
		}
	}
}

// TestImportRulesMatchLikeGoPatterns pins the pattern language of the doc's
// tables.
func TestImportRulesMatchLikeGoPatterns(t *testing.T) {
	for _, c := range []struct {
		pattern, pkg string
		want         bool
	}{
		{".", ".", true},
		{".", "ledger", false},
		{"ledger", "ledger", true},
		{"ledger", "ledger/x", false},
		{"internal/...", "internal/jsonx", true},
		{"internal/...", "internal", true},
		{"internal/...", "internalx", false},
		{"mcp/...", "mcp", true},
		{"mcp/...", "mcp/internal/conformanceclient", true},
		{"internal/...", "mcp/internal/conformanceclient", false},
	} {
		if got := matchPattern(c.pattern, c.pkg); got != c.want {
			t.Errorf("matchPattern(%q, %q) = %v, want %v", c.pattern, c.pkg, got, c.want)
		}
	}
}

// goListImports returns the module path and, for every package of the
// module, its non-test imports.
func goListImports(t *testing.T) (string, map[string][]string) {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list imports: %v", err)
	}
	out, err := exec.Command(gobin, "list", "-m").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	module := strings.TrimSpace(string(out))
	cmd := exec.Command(gobin, "list", "-json=ImportPath,Imports", "./...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err = cmd.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v\n%s", err, stderr.Bytes())
	}
	edges := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		edges[p.ImportPath] = p.Imports
	}
	if len(edges) == 0 {
		t.Fatal("go list ./... listed no package")
	}
	return module, edges
}

// relPath is a package's path relative to the module: "." for the root.
func relPath(module, pkg string) string {
	if pkg == module {
		return "."
	}
	return strings.TrimPrefix(pkg, module+"/")
}

// layerOf returns the first layer with a pattern matching pkg.
func layerOf(layers []importLayer, pkg string) *importLayer {
	for i := range layers {
		if matchAny(layers[i].packages, pkg) {
			return &layers[i]
		}
	}
	return nil
}

// exceptionFor returns the exception that lets pkg import to, or nil.
func exceptionFor(exceptions []*importException, pkg, to string) *importException {
	for _, e := range exceptions {
		if matchPattern(e.pkg, pkg) && matchAny(e.imports, to) {
			return e
		}
	}
	return nil
}

func matchAny(patterns []string, pkg string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return matchPattern(p, pkg) })
}

// matchPattern matches a package path relative to the module against a
// pattern of the doc: "." is the root, "x" exactly x, "x/..." x and every
// package below it.
func matchPattern(pattern, pkg string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return pkg == base || strings.HasPrefix(pkg, base+"/")
	}
	return pattern == pkg
}

var backticked = regexp.MustCompile("`([^`]+)`")

// docTable returns the body rows of the Markdown table that follows the
// marker comment beginning with marker, each split into cells.
func docTable(doc []byte, marker string) ([][]string, error) {
	start := bytes.Index(doc, []byte("<!-- "+marker))
	if start < 0 {
		return nil, errors.New(architectureDoc + ": no <!-- " + marker + " --> table")
	}
	sc := bufio.NewScanner(bytes.NewReader(doc[start:]))
	sc.Scan() // the marker
	var rows [][]string
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		rows = append(rows, cells)
	}
	if len(rows) < 3 {
		return nil, errors.New(architectureDoc + ": the " + marker + " table has no rows")
	}
	return rows[2:], nil // past the header and its rule
}

func patternsIn(cell string) []string {
	var out []string
	for _, m := range backticked.FindAllStringSubmatch(cell, -1) {
		out = append(out, m[1])
	}
	return out
}

func parseImportLayers(doc []byte) ([]importLayer, error) {
	rows, err := docTable(doc, "import-layers")
	if err != nil {
		return nil, err
	}
	var layers []importLayer
	for _, r := range rows {
		if len(r) != 3 || len(patternsIn(r[1])) == 0 {
			return nil, errors.New(architectureDoc + ": a layer row needs a name, `packages` and `imports`: " + strings.Join(r, " | "))
		}
		layers = append(layers, importLayer{name: r[0], packages: patternsIn(r[1]), imports: patternsIn(r[2])})
	}
	return layers, nil
}

func parseImportExceptions(doc []byte) ([]*importException, error) {
	rows, err := docTable(doc, "import-exceptions")
	if err != nil {
		return nil, err
	}
	var out []*importException
	for _, r := range rows {
		if len(r) != 3 || len(patternsIn(r[0])) != 1 || len(patternsIn(r[1])) == 0 || r[2] == "" {
			return nil, errors.New(architectureDoc + ": an exception row needs one `package`, what it may also import and why: " + strings.Join(r, " | "))
		}
		out = append(out, &importException{pkg: patternsIn(r[0])[0], imports: patternsIn(r[1]), why: r[2]})
	}
	return out, nil
}

// TestReadmeDependencyTableMatchesGoMod: every module go.mod requires
// directly has a row in the README's dependency table saying why, every
// module the table names is required, and a module whose row begins "tests
// only" is linked by no package outside tests and the test servers of
// examples/mcpservers.
func TestReadmeDependencyTableMatchesGoMod(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := docTable(readme, "dependencies")
	if err != nil {
		t.Fatal(err)
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to read go.mod: %v", err)
	}
	out, err := exec.Command(gobin, "mod", "edit", "-json").Output()
	if err != nil {
		t.Fatalf("go mod edit -json: %v", err)
	}
	var mod struct {
		Require []struct {
			Path     string
			Indirect bool
		}
	}
	if err := json.Unmarshal(out, &mod); err != nil {
		t.Fatal(err)
	}
	required := map[string]bool{} // module → direct
	for _, r := range mod.Require {
		required[r.Path] = !r.Indirect
	}
	named := map[string]bool{}
	var testsOnly []string
	for _, r := range rows {
		if len(r) < 2 || r[1] == "" {
			t.Errorf("README dependency row %q says no why", strings.Join(r, " | "))
			continue
		}
		only := strings.HasPrefix(r[1], "tests only") || strings.HasPrefix(r[1], "test servers and tests only")
		for _, m := range patternsIn(r[0]) {
			named[m] = true
			if _, ok := required[m]; !ok {
				t.Errorf("README dependency table names %s, which go.mod does not require: drop its row", m)
			}
			if only {
				testsOnly = append(testsOnly, m)
			}
		}
	}
	for m, direct := range required {
		if direct && !named[m] {
			t.Errorf("go.mod requires %s directly, but the README's dependency table does not say why: add a row", m)
		}
	}

	// What the library, the reference host and every other non-test package
	// links, the test servers left out.
	pkgs, err := exec.Command(gobin, "list", "./...").Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	args := []string{"list", "-deps", "-f", "{{with .Module}}{{.Path}}{{end}}"}
	for _, p := range strings.Fields(string(pkgs)) {
		if !strings.Contains(p, "/examples/mcpservers/") {
			args = append(args, p)
		}
	}
	cmd := exec.Command(gobin, args...)
	out, err = cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	linked := strings.Fields(string(out))
	for _, m := range testsOnly {
		if slices.Contains(linked, m) {
			t.Errorf("README says %s is for tests only, but a non-test package links it: fix the row or the import", m)
		}
	}
}

// TestReferenceCLIUsesOnlyThePublicAPI: the reference CLI imports no
// internal package of the module (non-test imports, as `go list -f
// '{{join .Imports " "}}' ./examples/pablo` reports them), so whatever it
// does, another host can do with the same public API.
func TestReferenceCLIUsesOnlyThePublicAPI(t *testing.T) {
	module, edges := goListImports(t)
	cli := module + "/examples/pablo"
	imports, ok := edges[cli]
	if !ok {
		t.Fatalf("go list reports no package %s", cli)
	}
	for _, imp := range imports {
		if !strings.HasPrefix(imp, module+"/") {
			continue
		}
		rel := relPath(module, imp)
		if rel == "internal" || strings.HasPrefix(rel, "internal/") || strings.Contains(rel, "/internal/") || strings.HasSuffix(rel, "/internal") {
			t.Errorf("examples/pablo imports %s: the reference CLI uses the public API only; make what it needs public (documented, with an Example) or move the work into the library", rel)
		}
	}
}

// TestRootHoldsTheCompositionAPIOnly: the root package's non-test files
// stay under 4,000 lines (issue 29): the engine, the façade's work and the
// capability graph live in their own packages, and a root that grows past
// the ceiling is moving work back in.
func TestRootHoldsTheCompositionAPIOnly(t *testing.T) {
	const ceiling = 4000
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	lines := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines += bytes.Count(b, []byte("\n"))
	}
	if lines >= ceiling {
		t.Errorf("the root package has %d non-test lines, at or over its ceiling of %d: move engine or façade work into its package", lines, ceiling)
	}
}
