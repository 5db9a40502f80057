package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	toml "github.com/pelletier/go-toml/v2"
)

// emptyTables is a file at the 1 MiB cap holding nothing but distinct
// empty tables (about 149,000).
func emptyTables() []byte {
	var b bytes.Buffer
	for i := 0; ; i++ {
		line := fmt.Sprintf("[t%d]\n", i)
		if b.Len()+len(line) > maxFileBytes {
			return b.Bytes()
		}
		b.WriteString(line)
	}
}

// TestTOMLWorkIsBoundedBeforeDecoding: a 1 MiB file of ~149,000 empty
// tables is refused with config_limit after reading little more than the
// schema's widest table, and the quadratic decoder never sees it. The test
// counts the pre-scan's steps, not time.
func TestTOMLWorkIsBoundedBeforeDecoding(t *testing.T) {
	t.Parallel()
	doc := emptyTables()
	steps, err := prescan(doc)
	if err == nil || err.Code != CodeLimit || steps != maxTableKeys+1 {
		t.Fatalf("steps %d, err %v; want config_limit after %d tables", steps, err, maxTableKeys+1)
	}
	if err.Line != maxTableKeys+1 {
		t.Fatalf("line %d", err.Line)
	}
	_, perr := parseDocument("big.toml", "/big.toml", doc)
	var ce *Error
	if !errors.As(perr, &ce) || ce.Code != CodeLimit || ce.Source != "big.toml" {
		t.Fatalf("parseDocument: %v", perr)
	}
	for name, doc := range map[string]string{
		"keys":   strings.Repeat("k = 1\n", 1) + genKeys(maxTableKeys+1),
		"array":  "a = [" + strings.Repeat("1,", maxArray) + "1]\n",
		"tables": strings.Repeat("[[authority]]\n", maxArray+1),
		"nodes":  genNested(maxNodes/200+1, 200),
	} {
		if _, err := prescan([]byte(doc)); err == nil || err.Code != CodeLimit {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Narrow tables, but thousands of them under many parents: the
	// decoder's lookups would scan ~10^8 entries (half a second); the
	// pre-scan stops once its replay of them passes maxDecodeWork.
	deep := deepProfiles(64)
	exprs := strings.Count(deep, "\n")
	steps, err = prescan([]byte(deep))
	if err == nil || err.Code != CodeLimit || !strings.Contains(err.Message, "lookup steps") || steps >= exprs {
		t.Fatalf("deep: %d of %d expressions, %v", steps, exprs, err)
	}
	if _, err := prescan([]byte(deepProfiles(8))); err != nil {
		t.Fatalf("a smaller deep document: %v", err)
	}
}

// deepProfiles writes n profiles, each with 64 models, servers and routes.
func deepProfiles(n int) string {
	var b strings.Builder
	for p := 0; p < n; p++ {
		for s := 0; s < 64; s++ {
			fmt.Fprintf(&b, "[profiles.p%d.options.models.m%d]\nid = \"x\"\nprovider = \"openai_compatible\"\n", p, s)
			fmt.Fprintf(&b, "[profiles.p%d.options.mcp.servers.s%d]\ntransport = \"stdio\"\n", p, s)
			fmt.Fprintf(&b, "[profiles.p%d.options.routes.r%d]\nentries = [{model = \"m0\"}]\n", p, s)
		}
	}
	return b.String()
}

func genKeys(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "k%d = 1\n", i)
	}
	return b.String()
}

// genNested writes tables of width keys each: many values, no wide table.
func genNested(tables, width int) string {
	var b strings.Builder
	for i := 0; i < tables; i++ {
		fmt.Fprintf(&b, "[g%d.t%d]\n", i/200, i)
		b.WriteString(genKeys(width))
	}
	return b.String()
}

// TestPrescanBoundsCoverTheSchema: no table of the schema has more fields,
// no map more entries, than maxTableKeys, and no list more elements than
// maxArray, so the pre-scan refuses nothing the schema could accept.
func TestPrescanBoundsCoverTheSchema(t *testing.T) {
	t.Parallel()
	var walk func(s *spec, path string)
	walk = func(s *spec, path string) {
		if s == nil {
			return
		}
		switch s.kind {
		case sTable:
			if len(s.fields) > maxTableKeys {
				t.Errorf("%s has %d fields", path, len(s.fields))
			}
			for k, f := range s.fields {
				walk(f, path+"/"+k)
			}
		case sMap:
			if s.max > maxTableKeys {
				t.Errorf("%s holds up to %d entries", path, s.max)
			}
			walk(s.elem, path+"/*")
		case sList:
			if s.max > maxArray {
				t.Errorf("%s holds up to %d items", path, s.max)
			}
			walk(s.elem, path+"/*")
		}
	}
	walk(optionsSpec(), "/options")
	walk(authoritySpec(), "/authority/*")
	// No key path of the schema is near maxKeyBytes: the longest, with
	// every map key at the longest its key rule accepts, under a profile.
	if n := len("/profiles/") + 64 + len("/options") + longestPath(t, optionsSpec()); n > maxKeyBytes/2 {
		t.Errorf("a path of the schema is %d bytes long", n)
	}
	if n := len("/authority/1023") + longestPath(t, authoritySpec()); n > maxKeyBytes/2 {
		t.Errorf("an authority path is %d bytes long", n)
	}
	walk(credentialSpec(), "/credentials/*")
	walk(deploymentSpec(), "/deployment")
	for _, n := range []int{maxProfiles, maxNamed, maxLayers, maxImportsPerFile, maxRulesPerDim} {
		if n > maxTableKeys || n > maxArray {
			t.Errorf("a resolver bound %d exceeds the pre-scan's", n)
		}
	}
}

// longestPath is the longest key path below s, in bytes, each part with
// its separator: a map's key at the longest its key rule accepts (probed
// up to maxKeyBytes), a list's index at 4 digits.
func longestPath(t *testing.T, s *spec) int {
	if s == nil {
		return 0
	}
	switch s.kind {
	case sTable:
		n := 0
		for k, f := range s.fields {
			n = max(n, 1+len(k)+longestPath(t, f))
		}
		return n
	case sMap:
		key := 0
		for l := 1; l <= maxKeyBytes; l++ {
			for _, k := range []string{strings.Repeat("a", l), "PABLO_TASK_" + strings.Repeat("A", max(l-11, 0))} {
				if len(k) == l && (s.key == nil || s.key(k) == nil) {
					key = l
				}
			}
		}
		if key == maxKeyBytes {
			t.Errorf("a map accepts keys of %d bytes and more", key)
		}
		return 1 + key + longestPath(t, s.elem)
	case sList:
		return 5 + longestPath(t, s.elem)
	}
	return 0
}

// TestPrescanAcceptsEveryShippedDeployment: the presets Pablo ships, the
// original's presets and examples, and the demo pass the pre-scan.
func TestPrescanAcceptsEveryShippedDeployment(t *testing.T) {
	t.Parallel()
	n := 0
	for _, root := range []string{shipped, originals, "../../examples"} {
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".toml") {
				return nil
			}
			b, _ := os.ReadFile(p)
			if _, err := prescan(b); err != nil {
				t.Errorf("%s: %v", p, err)
			}
			n++
			return nil
		})
	}
	if n < 9 {
		t.Fatalf("only %d files", n)
	}
}

// FuzzPrescan: the pre-scan never refuses a document the decoder accepts
// within the schema's widths: a width refusal is always justified by the
// decoded tree (too many values, a table too wide, an array too long).
func FuzzPrescan(f *testing.F) {
	for _, p := range []string{"presets/base.toml", "presets/production.toml", "examples/vercel.toml"} {
		b, err := os.ReadFile(filepath.Join(originals, p))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("[[a]]\n[a.b]\nc = 1\n[[a]]\n[a.b]\nc = 2\n"))
	f.Add([]byte("a.b.c = 1\na.b.d = { e = [1, {f = 2}] }\n[x]\n'q.k' = 1\n\"q.k\" = 2\n"))
	for _, sh := range adversarialShapes() {
		if doc := sh.doc(4 << 10); len(doc) <= 8<<10 {
			f.Add([]byte(doc))
		}
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		_, err := prescan(doc)
		if err == nil || strings.Contains(err.Message, "lookup steps") {
			// A work refusal is the one the pre-scan may make of a
			// document within the widths (TestTOMLWorkIsBoundedBeforeDecoding).
			return
		}
		var tree map[string]any
		if toml.Unmarshal(doc, &tree) != nil {
			return
		}
		nodes := 0
		// wide reports a table too wide, an array too long, a value too
		// deep or a key path too long: what the schema never accepts.
		var wide func(v any, depth, bytes int) bool
		wide = func(v any, depth, bytes int) bool {
			nodes++
			if depth > maxNesting || bytes > maxKeyBytes {
				return true
			}
			switch x := v.(type) {
			case map[string]any:
				if len(x) > maxTableKeys {
					return true
				}
				for k, e := range x {
					if wide(e, depth+1, bytes+1+len(k)) {
						return true
					}
				}
			case []any:
				if len(x) > maxArray {
					return true
				}
				for i, e := range x {
					if wide(e, depth+1, bytes+1+len(strconv.Itoa(i))) {
						return true
					}
				}
			}
			return false
		}
		if !wide(tree, 0, 0) && nodes <= maxNodes {
			t.Fatalf("refused a document within the bounds: %v", err)
		}
	})
}

// BenchmarkPrescan1MiBOfEmptyTables: judging the 1 MiB file of empty
// tables (config_limit) through parseDocument.
func BenchmarkPrescan1MiBOfEmptyTables(b *testing.B) {
	doc := emptyTables()
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := parseDocument("big.toml", "/big.toml", doc); err == nil {
			b.Fatal("accepted")
		}
	}
}

// BenchmarkParseBasePreset: the pre-scan's share of an ordinary document.
func BenchmarkParseBasePreset(b *testing.B) {
	doc, err := os.ReadFile(filepath.Join(originals, "presets/base.toml"))
	if err != nil {
		b.Skip(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := parseDocument("base.toml", "/base.toml", doc); err != nil {
			b.Fatal(err)
		}
	}
}
