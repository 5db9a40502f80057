package skills

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// corpus copies testdata/corpus into a temporary directory and adds what git
// cannot keep: symlinks, a FIFO and an oversized frontmatter. It returns the
// discovery options for roots "team" and "other" and the expected finding
// code of every broken package.
func corpus(t testing.TB) (Options, map[string]Code) {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("testdata/corpus")); err != nil {
		t.Fatal(err)
	}
	team := filepath.Join(dir, "team")
	must(t, os.Symlink("real.md", filepath.Join(team, "symlinked-file", SkillFile)))
	must(t, os.Symlink("evidence-review", filepath.Join(team, "symlinked-dir")))
	must(t, os.Symlink("guide.md", filepath.Join(team, "resources", "references", "link.md")))
	must(t, os.Symlink("references", filepath.Join(team, "resources", "linkdir")))
	must(t, os.MkdirAll(filepath.Join(team, "oversize-frontmatter"), 0o755))
	write(t, filepath.Join(team, "oversize-frontmatter", SkillFile),
		"---\nname: oversize-frontmatter\ndescription: d\n#"+strings.Repeat("x", MaxFrontmatterBytes)+"\n---\n")
	broken := maps.Clone(wantBroken)
	if makeFIFO(filepath.Join(team, "fifo-skill"), SkillFile) {
		broken["fifo-skill"] = CodeSkillFileNotRegular
	}
	return Options{Roots: map[string]string{"team": team, "other": filepath.Join(dir, "other")}}, broken
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func write(t testing.TB, path, content string) {
	t.Helper()
	must(t, os.MkdirAll(filepath.Dir(path), 0o755))
	must(t, os.WriteFile(path, []byte(content), 0o644))
}

// wantBroken maps every broken package of the corpus that git keeps to its
// one finding.
var wantBroken = map[string]Code{
	"Bad-Name":             CodeInvalidName,
	"anchors":              CodeUnsupportedYAML,
	"bad-yaml":             CodeInvalidYAML,
	"missing-skill-md":     CodeMissingSkillFile,
	"name-mismatch":        CodeNameMismatch,
	"no-frontmatter":       CodeMissingFrontmatter,
	"non-utf8":             CodeInvalidEncoding,
	"oversize-description": CodeInvalidDescription,
	"oversize-frontmatter": CodeFrontmatterTooLarge,
	"sequence-description": CodeUnsupportedYAML,
	"symlinked-dir":        CodePackageSymlink,
	"symlinked-file":       CodeSkillFileSymlink,
	"unknown-key":          CodeUnknownKey,
	"unterminated":         CodeUnterminated,
}

var wantSkills = []string{
	"other/evidence-review",
	"team/crlf-endings",
	"team/evidence-review",
	"team/multi-line",
	"team/quoted-values",
	"team/resources",
	"team/sequence-tools",
	"team/with-metadata",
	"team/with-tools",
}

func discoverCorpus(t testing.TB) (*Catalog, map[string]Code) {
	t.Helper()
	opts, broken := corpus(t)
	cat, err := Discover(context.Background(), opts)
	if err != nil {
		t.Fatalf("Discover: %v", err)
	}
	return cat, broken
}

func TestEachBrokenPackageIsItsOwnFindingAndTheRestLoad(t *testing.T) {
	cat, broken := discoverCorpus(t)
	var got []string
	for _, s := range cat.Skills() {
		got = append(got, s.QualifiedName)
	}
	if !reflect.DeepEqual(got, wantSkills) {
		t.Fatalf("skills = %v\nwant %v", got, wantSkills)
	}
	findings := map[string]Code{}
	for _, f := range cat.Findings() {
		if f.Root != "team" {
			t.Errorf("unexpected finding in root %s: %v", f.Root, f)
		}
		if _, dup := findings[f.Dir]; dup {
			t.Errorf("package %s has more than one finding", f.Dir)
		}
		findings[f.Dir] = f.Code
		if f.Reason == "" {
			t.Errorf("finding %v has no reason", f)
		}
	}
	if !reflect.DeepEqual(findings, broken) {
		t.Fatalf("findings = %v\nwant %v", findings, broken)
	}
	if cat.FindingsDropped() != 0 {
		t.Fatalf("dropped %d findings", cat.FindingsDropped())
	}
}

func TestValidCorpusPackagesParseAsWritten(t *testing.T) {
	cat, _ := discoverCorpus(t)
	tests := map[string]func(Skill) bool{
		"team/multi-line": func(s Skill) bool {
			return s.Description == "Summarise long reports.\nUse when the input is longer than a page.\n" &&
				s.Compatibility == "Needs a model with a long context window.\n"
		},
		"team/with-metadata": func(s Skill) bool {
			return s.License == "Apache-2.0" && reflect.DeepEqual(s.Metadata,
				map[string]string{"author": "pablo-tests", "version": "1.0", "reviewed": "true"})
		},
		"team/sequence-tools": func(s Skill) bool {
			return reflect.DeepEqual(s.AllowedTools, []string{"fs.read"})
		},
		"team/with-tools": func(s Skill) bool {
			return reflect.DeepEqual(s.AllowedTools, []string{"fs.read", "skill.read", "mcp/records/lookup"})
		},
		"team/crlf-endings": func(s Skill) bool {
			return s.Description == "Written on Windows with CRLF line endings."
		},
		"team/quoted-values": func(s Skill) bool {
			return s.Description == "It's quoted: colons and # hashes are text." &&
				reflect.DeepEqual(s.AllowedTools, []string{"fs.read", "fs.list"})
		},
		"team/evidence-review": func(s Skill) bool {
			return s.RelativePath == "evidence-review/SKILL.md" && len(s.MetadataSHA256) == 64 && s.CatalogBytes > 0
		},
	}
	for name, ok := range tests {
		s, err := cat.Lookup(name)
		if err != nil {
			t.Fatalf("Lookup(%s): %v", name, err)
		}
		if !ok(s) {
			t.Errorf("%s parsed as %#v", name, s)
		}
	}
}

func TestCrossRootShortNameCollisionKeepsBothAndRequiresQualification(t *testing.T) {
	cat, _ := discoverCorpus(t)
	_, err := cat.Lookup("evidence-review")
	if !errors.Is(err, ErrAmbiguous) || !strings.Contains(err.Error(), "other/evidence-review, team/evidence-review") {
		t.Fatalf("short lookup: want ErrAmbiguous naming both, got %v", err)
	}
	for _, q := range []string{"team/evidence-review", "other/evidence-review"} {
		s, err := cat.Lookup(q)
		if err != nil || !s.QualifiedOnly {
			t.Fatalf("Lookup(%s) = %+v, %v; want qualified-only entry", q, s, err)
		}
	}
	s, err := cat.Lookup("multi-line")
	if err != nil || s.QualifiedName != "team/multi-line" || s.QualifiedOnly {
		t.Fatalf("unique short name: %+v, %v", s, err)
	}
	if _, err := cat.Lookup("team/nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown: want ErrNotFound, got %v", err)
	}
}

// TestUnknownSkillSuggestsTheNearestName: a --skill or selection naming a
// Skill the catalog lacks says which admitted name is nearest, qualified
// for a qualified name and short for a short one.
func TestUnknownSkillSuggestsTheNearestName(t *testing.T) {
	cat, _ := discoverCorpus(t)
	for _, c := range []struct{ in, want string }{
		{"team/multi-lin", `did you mean "team/multi-line"?`},
		{"multi-lnie", `did you mean "multi-line"?`},
	} {
		_, err := cat.Lookup(c.in)
		if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Lookup(%s): want ErrNotFound with %q, got %v", c.in, c.want, err)
		}
	}
}

func TestSameRootNameCollisionRemovesEveryConflictingEntry(t *testing.T) {
	// Names equal their directories, so only a filesystem that folds names
	// can produce this; exercise the rule directly.
	d := &discoverer{lim: referenceLimits, cat: &Catalog{dirs: map[string]os.FileInfo{}}}
	for _, q := range []string{"r/a", "r/b", "r/a"} {
		root, name, _ := strings.Cut(q, "/")
		d.cat.skills = append(d.cat.skills, Skill{QualifiedName: q, Root: root, Frontmatter: Frontmatter{Name: name}})
	}
	d.resolveCollisions()
	if len(d.cat.skills) != 1 || d.cat.skills[0].QualifiedName != "r/b" {
		t.Fatalf("skills = %+v; want only r/b", d.cat.skills)
	}
	if len(d.cat.findings) != 1 || d.cat.findings[0].Code != CodeDuplicateName {
		t.Fatalf("findings = %+v; want one duplicate_name", d.cat.findings)
	}
}

func TestRootProblemsAreFindings(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	write(t, filepath.Join(real, "a", SkillFile), "---\nname: a\ndescription: d\n---\n")
	must(t, os.Symlink(real, filepath.Join(dir, "link")))
	write(t, filepath.Join(dir, "file"), "x")
	cat, err := Discover(context.Background(), Options{Roots: map[string]string{
		"linked":  filepath.Join(dir, "link"),
		"missing": filepath.Join(dir, "absent"),
		"file":    filepath.Join(dir, "file"),
		"ok":      real,
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := []Finding{
		{Root: "file", Code: CodeRootNotDirectory},
		{Root: "linked", Code: CodeRootSymlink},
		{Root: "missing", Code: CodeRootUnavailable},
	}
	got := cat.Findings()
	for i := range got {
		got[i].Reason = ""
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("findings = %+v\nwant %+v", got, want)
	}
	if s := cat.Skills(); len(s) != 1 || s[0].QualifiedName != "ok/a" {
		t.Fatalf("skills = %+v", s)
	}
}

func TestContainmentRefusesRootsOutsideAllowedDirs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	inside := filepath.Join(dir, "allowed", "skills")
	outside := filepath.Join(dir, "allowed-not", "skills")
	write(t, filepath.Join(inside, "a", SkillFile), "---\nname: a\ndescription: d\n---\n")
	write(t, filepath.Join(outside, "a", SkillFile), "---\nname: a\ndescription: d\n---\n")
	roots := map[string]string{"in": inside, "out": outside}
	cat, err := Discover(context.Background(), Options{Roots: roots, Contained: WithinDirs([]string{filepath.Join(dir, "allowed")})})
	if err != nil {
		t.Fatal(err)
	}
	if s := cat.Skills(); len(s) != 1 || s[0].QualifiedName != "in/a" {
		t.Fatalf("skills = %+v", s)
	}
	if f := cat.Findings(); len(f) != 1 || f[0].Root != "out" || f[0].Code != CodeRootDenied {
		t.Fatalf("findings = %+v", f)
	}
	// An empty allowed list denies every root.
	cat, err = Discover(context.Background(), Options{Roots: roots, Contained: WithinDirs(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if len(cat.Skills()) != 0 || len(cat.Findings()) != 2 {
		t.Fatalf("empty allowed list: skills %v findings %v", cat.Skills(), cat.Findings())
	}
}

func TestOptionsAreValidated(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	many := func(n int) map[string]string {
		m := map[string]string{}
		for i := range n {
			m[fmt.Sprintf("r%d", i)] = dir
		}
		return m
	}
	tests := []struct {
		name  string
		roots map[string]string
		kind  error
	}{
		{"no roots scans nothing", nil, nil},
		{"16 roots", many(MaxRoots), nil},
		{"17 roots", many(MaxRoots + 1), ErrLimitExceeded},
		{"root ID at 32 bytes", map[string]string{strings.Repeat("a", 32): dir}, nil},
		{"root ID past 32 bytes", map[string]string{strings.Repeat("a", 33): dir}, ErrInvalidOptions},
		{"root ID with slash", map[string]string{"a/b": dir}, ErrInvalidOptions},
		{"empty root ID", map[string]string{"": dir}, ErrInvalidOptions},
		{"relative path", map[string]string{"a": "skills"}, ErrInvalidOptions},
		{"unclean path", map[string]string{"a": dir + "/x/.."}, ErrInvalidOptions},
		{"path past 4096 bytes", map[string]string{"a": "/" + strings.Repeat("p", MaxRootPathBytes)}, ErrLimitExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Discover(context.Background(), Options{Roots: tt.roots})
			if tt.kind == nil && err != nil || tt.kind != nil && !errors.Is(err, tt.kind) {
				t.Fatalf("got %v, want %v", err, tt.kind)
			}
		})
	}
}

func TestDiscoveryHonoursTheDeadline(t *testing.T) {
	opts, _ := corpus(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Discover(ctx, opts); !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
}

func TestDiscoveryNeverParsesTheBody(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// A body that is huge and not UTF-8 still discovers: only the
	// frontmatter is read and parsed.
	body := strings.Repeat("\xff\xfe not text ", 300_000)
	write(t, filepath.Join(dir, "big", SkillFile), "---\nname: big\ndescription: d\n---\n"+body)
	cat, err := Discover(context.Background(), Options{Roots: map[string]string{"r": dir}})
	if err != nil || len(cat.Skills()) != 1 {
		t.Fatalf("skills %v findings %v err %v", cat.Skills(), cat.Findings(), err)
	}
}

func TestHiddenEntriesAndPlainFilesAreNotPackages(t *testing.T) {
	cat, _ := discoverCorpus(t)
	for _, f := range cat.Findings() {
		if f.Dir == ".hidden" || f.Dir == "README.md" {
			t.Fatalf("unexpected finding %v", f)
		}
	}
}

func makePackages(t testing.TB, root string, n int, frontmatterPad int) {
	t.Helper()
	for i := range n {
		name := fmt.Sprintf("skill-%04d", i)
		content := "---\nname: " + name + "\ndescription: generated package\n"
		if frontmatterPad > 0 {
			pad := frontmatterPad - len(content) - len("#\n---\n")
			content += "#" + strings.Repeat("x", pad) + "\n"
		}
		write(t, filepath.Join(root, name, SkillFile), content+"---\nbody\n")
	}
}

// sixteenRoots configures the maximum number of roots: fifteen share
// directory a and one uses directory b. Global limits count every root, so
// small directories reach them quickly.
func sixteenRoots(a, b string) Options {
	roots := map[string]string{"b": b}
	for i := range MaxRoots - 1 {
		roots[fmt.Sprintf("a%02d", i)] = a
	}
	return Options{Roots: roots}
}

func TestDiscoveryLimitsAtAndPastTheBoundary(t *testing.T) {
	const perRoot = MaxRoots
	t.Run("directory entries", func(t *testing.T) {
		t.Parallel()
		a, b := t.TempDir(), t.TempDir()
		for i := range MaxDirectoryEntries / perRoot {
			write(t, filepath.Join(a, fmt.Sprintf("f%05d", i)), "")
			write(t, filepath.Join(b, fmt.Sprintf("f%05d", i)), "")
		}
		if _, err := Discover(context.Background(), sixteenRoots(a, b)); err != nil {
			t.Fatalf("at limit: %v", err)
		}
		write(t, filepath.Join(b, "one-more"), "")
		if _, err := Discover(context.Background(), sixteenRoots(a, b)); !errors.Is(err, ErrLimitExceeded) {
			t.Fatalf("past limit: want ErrLimitExceeded, got %v", err)
		}
	})
	t.Run("admitted skills", func(t *testing.T) {
		t.Parallel()
		a, b := t.TempDir(), t.TempDir()
		makePackages(t, a, MaxSkills/perRoot, 0)
		makePackages(t, b, MaxSkills/perRoot, 0)
		cat, err := Discover(context.Background(), sixteenRoots(a, b))
		if err != nil || len(cat.Skills()) != MaxSkills {
			t.Fatalf("at limit: %v", err)
		}
		write(t, filepath.Join(b, "zz", SkillFile), "---\nname: zz\ndescription: d\n---\n")
		if _, err := Discover(context.Background(), sixteenRoots(a, b)); !errors.Is(err, ErrLimitExceeded) {
			t.Fatalf("past limit: want ErrLimitExceeded, got %v", err)
		}
	})
	t.Run("aggregate metadata", func(t *testing.T) {
		t.Parallel()
		a, b := t.TempDir(), t.TempDir()
		n := MaxMetadataBytes / MaxFrontmatterBytes / perRoot
		makePackages(t, a, n, MaxFrontmatterBytes)
		makePackages(t, b, n, MaxFrontmatterBytes)
		if _, err := Discover(context.Background(), sixteenRoots(a, b)); err != nil {
			t.Fatalf("at limit: %v", err)
		}
		write(t, filepath.Join(b, "zz", SkillFile), "---\nname: zz\ndescription: d\n---\n")
		if _, err := Discover(context.Background(), sixteenRoots(a, b)); !errors.Is(err, ErrLimitExceeded) {
			t.Fatalf("past limit: want ErrLimitExceeded, got %v", err)
		}
	})
	t.Run("findings", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		for i := range MaxFindings {
			must(t, os.MkdirAll(filepath.Join(dir, fmt.Sprintf("empty-%03d", i)), 0o755))
		}
		cat, err := Discover(context.Background(), Options{Roots: map[string]string{"r": dir}})
		if err != nil || len(cat.Findings()) != MaxFindings || cat.FindingsDropped() != 0 {
			t.Fatalf("at limit: %d findings, %d dropped, %v", len(cat.Findings()), cat.FindingsDropped(), err)
		}
		must(t, os.MkdirAll(filepath.Join(dir, "empty-zzz"), 0o755))
		cat, err = Discover(context.Background(), Options{Roots: map[string]string{"r": dir}})
		if err != nil || len(cat.Findings()) != MaxFindings || cat.FindingsDropped() != 1 {
			t.Fatalf("past limit: %d findings, %d dropped, %v", len(cat.Findings()), cat.FindingsDropped(), err)
		}
	})
}

// TestPresetSkillsDiscoverPresetEvidence: the Skill of the original's
// preset bundle (a copy in testdata/preset), the same Skill kept with the
// original's deployment files at the repository's root, and the one Pablo's
// own presets ship each discover as preset/evidence with no finding.
func TestPresetSkillsDiscoverPresetEvidence(t *testing.T) {
	t.Parallel()
	roots := []string{"testdata/preset", "../testdata/reference/presets/skills", "../presets/skills"}
	for _, r := range roots {
		abs, err := filepath.Abs(r)
		must(t, err)
		cat, err := Discover(context.Background(), Options{Roots: map[string]string{"preset": abs}})
		if err != nil {
			t.Fatal(err)
		}
		s, err := cat.Lookup("preset/evidence")
		if err != nil || len(cat.Findings()) != 0 {
			t.Fatalf("%s: %v, findings %v", r, err, cat.Findings())
		}
		if !strings.HasPrefix(s.Description, "Report verified evidence") {
			t.Fatalf("description %q", s.Description)
		}
	}
}

func TestCatalogJSONIsStable(t *testing.T) {
	cat, _ := discoverCorpus(t)
	a, err := json.Marshal(cat)
	must(t, err)
	b, err := json.Marshal(cat)
	must(t, err)
	if string(a) != string(b) {
		t.Fatal("two marshals differ")
	}
	s, _ := cat.Lookup("team/with-metadata")
	js, err := json.Marshal(s)
	must(t, err)
	keys := []string{`"qualified_name"`, `"root"`, `"name"`, `"description"`, `"license"`, `"compatibility"`,
		`"metadata":{"author"`, `"relative_path"`, `"metadata_sha256"`, `"catalog_bytes"`}
	last := -1
	for _, k := range keys {
		i := strings.Index(string(js), k)
		if i <= last {
			t.Fatalf("key %s out of order in %s", k, js)
		}
		last = i
	}
	empty, err := json.Marshal(&Catalog{})
	must(t, err)
	if string(empty) != `{"skills":[],"findings":[],"findings_dropped":0}` {
		t.Fatalf("empty catalog JSON %s", empty)
	}
	if !slices.IsSortedFunc(cat.Skills(), func(a, b Skill) int { return strings.Compare(a.QualifiedName, b.QualifiedName) }) {
		t.Fatal("skills not sorted")
	}
}
