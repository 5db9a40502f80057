package skills

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestPreviewServesEverySource: a catalog holding a Skill from each
// source format (a root's directory, a single file, an inline Skill, an
// archive package, a git package) previews each one's instructions,
// frontmatter excluded: whole when short, the first bytes when not, cut
// at a character boundary. A SKILL.md changed since discovery, a refused
// package and an unknown name are errors, and invalid UTF-8 is replaced.
func TestPreviewServesEverySource(t *testing.T) {
	ctx := context.Background()
	tmp := t.TempDir()
	// The instructions: 11 ASCII bytes, then "é" (2 bytes) straddling a
	// limit of 12.
	body := func(name string) string { return "Do " + name[:3] + " now.é" + strings.Repeat("x", 100) + "\n" }
	skill := func(name string) string {
		return "---\nname: " + name + "\ndescription: d\n---\n" + body(name)
	}
	write := func(path, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(tmp, "root", "dirskill", "SKILL.md"), skill("dirskill"))
	write(filepath.Join(tmp, "single.md"), skill("fileskill"))
	arc := tarGz(t, tarEntry{name: "SKILL.md", body: skill("arcskill")})
	write(filepath.Join(tmp, "arc.tar.gz"), string(arc))
	r := newGitRepo(t)
	r.commit(map[string]gitFile{"SKILL.md": {data: skill("gitskill")}})
	opts := Options{
		Roots:  map[string]string{"team": filepath.Join(tmp, "root")},
		Files:  map[string]string{"fileskill": filepath.Join(tmp, "single.md")},
		Inline: map[string]Inline{"inlskill": {Description: "d", Instructions: body("inlskill")}},
		Packages: map[string]Package{
			"arcskill": {Archive: filepath.Join(tmp, "arc.tar.gz"), Digest: archiveDigest(arc)},
			"gitskill": {Git: &GitSource{Repo: r.dir, Ref: "main"}, Digest: treeDigest(map[string][]byte{SkillFile: []byte(skill("gitskill"))})},
			"badskill": {Archive: filepath.Join(tmp, "arc.tar.gz"), Digest: "sha256:" + strings.Repeat("0", 64)},
		},
	}
	cat, err := Discover(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"team/dirskill", FileRoot + "/fileskill", InlineRoot + "/inlskill", PackageRoot + "/arcskill", PackageRoot + "/gitskill"}
	if len(cat.Skills()) != len(names) {
		t.Fatalf("admitted %v (findings %v)", cat.Skills(), cat.Findings())
	}
	for _, qn := range names {
		short := qn[strings.Index(qn, "/")+1:]
		whole := body(short)
		if text, more, err := cat.Preview(qn, 4096); err != nil || text != whole || more {
			t.Errorf("%s whole: %q %v %v", qn, text, more, err)
		}
		if text, more, err := cat.Preview(short, 12); err != nil || text != whole[:11] || !more || !utf8.ValidString(text) {
			t.Errorf("%s first 12 bytes: %q %v %v", qn, text, more, err)
		}
		if text, more, err := cat.Preview(qn, 13); err != nil || text != whole[:13] || !more {
			t.Errorf("%s first 13 bytes: %q %v %v", qn, text, more, err)
		}
	}
	if _, _, err := cat.Preview("package/badskill", 10); !errors.Is(err, ErrDigestMismatch) {
		t.Errorf("the refused package: %v", err)
	}
	if _, _, err := cat.Preview("team/none", 10); !errors.Is(err, ErrNotFound) {
		t.Errorf("an unknown Skill: %v", err)
	}
	write(filepath.Join(tmp, "root", "dirskill", "SKILL.md"), strings.Replace(skill("dirskill"), "description: d", "description: e", 1))
	if _, _, err := cat.Preview("team/dirskill", 10); !errors.Is(err, ErrChanged) {
		t.Errorf("a SKILL.md changed since discovery: %v", err)
	}
	write(filepath.Join(tmp, "single.md"), "---\nname: fileskill\ndescription: d\n---\nbad \xff byte\n")
	cat, err = Discover(ctx, Options{Files: opts.Files})
	if err != nil {
		t.Fatal(err)
	}
	if text, _, err := cat.Preview("fileskill", 100); err != nil || text != "bad \uFFFD byte\n" {
		t.Errorf("invalid UTF-8: %q %v", text, err)
	}
}
