package skills

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSingleFileSkillFlowsThroughDiscoveryActivationAndRead(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "review.md")
	body := "---\nname: review\ndescription: Reviews a change.\nmetadata:\n  version: 1.2.0\n---\nReview it.\n"
	os.WriteFile(path, []byte(body), 0o600)
	// A README beside it is never a Skill: only named files are.
	os.WriteFile(filepath.Join(dir, "README.md"), []byte("# notes\n"), 0o600)
	cat, err := Discover(ctx, Options{Files: map[string]string{"review": path}})
	if err != nil {
		t.Fatal(err)
	}
	if len(cat.Skills()) != 1 || len(cat.Findings()) != 0 {
		t.Fatalf("catalog: %v %v", cat.Skills(), cat.Findings())
	}
	s, err := cat.Lookup("review")
	if err != nil || s.QualifiedName != "file/review" || s.Root != FileRoot || s.Bundle().Version != "1.2.0" {
		t.Fatalf("skill = %+v, %v", s, err)
	}
	act, err := cat.Activate(ctx, []string{"file/review"})
	if err != nil {
		t.Fatal(err)
	}
	if got := act.Skills()[0].Instructions; got != "Review it.\n" {
		t.Fatalf("instructions = %q", got)
	}
	res, err := act.Read(ctx, ReadArguments{Skill: "file/review", Path: SkillFile}, ReadOptions{})
	if err != nil || res.Text != body {
		t.Fatalf("read SKILL.md: %+v, %v", res, err)
	}
	for _, p := range []string{"README.md", "review.md", "x/SKILL.md"} {
		if _, err := act.Read(ctx, ReadArguments{Skill: "file/review", Path: p}, ReadOptions{}); CodeOf(err) != CodeNotFound {
			t.Errorf("read %s: %v", p, err)
		}
	}
	// Its digest is that of a package holding only that file as SKILL.md.
	pkg := filepath.Join(dir, "pkg", "review")
	os.MkdirAll(pkg, 0o700)
	os.WriteFile(filepath.Join(pkg, SkillFile), []byte(body), 0o600)
	want, err := PackageDigest(pkg)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := FileDigest(path); err != nil || got != want {
		t.Fatalf("FileDigest = %s, %v; want %s", got, err, want)
	}
	opts := Options{Files: map[string]string{"review": path}}
	if err := VerifyPin(opts, "file/review", want); err != nil {
		t.Fatal(err)
	}
	// A file replaced after discovery is not activated.
	os.WriteFile(path+".new", []byte(body), 0o600)
	os.Rename(path+".new", path)
	if _, err := cat.Activate(ctx, []string{"file/review"}); !errors.Is(err, ErrChanged) {
		t.Fatalf("a replaced file: %v", err)
	}
	os.WriteFile(path, []byte(body+"more\n"), 0o600)
	var de *DigestError
	if err := VerifyPin(opts, "file/review", want); !errors.As(err, &de) || de.Dir != "file/review" {
		t.Fatalf("a changed file's pin: %v", err)
	}
}

func TestSingleFileSkillFindings(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o600)
		return p
	}
	good := write("good.md", "---\nname: good\ndescription: d\n---\nx\n")
	os.Symlink(good, filepath.Join(dir, "link.md"))
	os.Mkdir(filepath.Join(dir, "sub"), 0o700)
	cases := map[string]struct {
		path string
		code Code
	}{
		"missing":        {filepath.Join(dir, "none.md"), CodeSourceMissing},
		"symlink":        {filepath.Join(dir, "link.md"), CodeSkillFileSymlink},
		"directory":      {filepath.Join(dir, "sub"), CodeSkillFileNotRegular},
		"name mismatch":  {good, CodeNameMismatch},
		"no frontmatter": {write("plain.md", "# just text\n"), CodeMissingFrontmatter},
		"unknown key":    {write("bad.md", "---\nname: other\ndescription: d\nrun: rm\n---\n"), CodeUnknownKey},
		"oversized":      {write("big.md", "---\nname: big\ndescription: "+strings.Repeat("a", MaxFrontmatterBytes)+"\n---\n"), CodeFrontmatterTooLarge},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			cat, err := Discover(context.Background(), Options{Files: map[string]string{"other": c.path}})
			if err != nil {
				t.Fatal(err)
			}
			f := cat.Findings()
			if len(cat.Skills()) != 0 || len(f) != 1 || f[0].Code != c.code || f[0].Root != FileRoot || f[0].Dir != "other" {
				t.Fatalf("findings = %v", f)
			}
		})
	}
	// An authority layer that bounds skill_roots admits a file inside
	// them and denies one outside.
	for allowed, want := range map[string]int{dir: 1, filepath.Join(dir, "sub"): 0} {
		cat, err := Discover(context.Background(), Options{Files: map[string]string{"good": good}, Contained: WithinDirs([]string{allowed})})
		if err != nil || len(cat.Skills()) != want {
			t.Errorf("bounded by %s: %v %v", allowed, cat.Skills(), err)
		}
	}
	if _, err := Discover(context.Background(), Options{Files: map[string]string{"good": "rel/good.md"}}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("a relative path: %v", err)
	}
	if _, err := Discover(context.Background(), Options{Roots: map[string]string{FileRoot: dir}, Files: map[string]string{"good": good}}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("a root named file beside file Skills: %v", err)
	}
}

func TestPinOfAnInlineSkillSaysItIsNoPackage(t *testing.T) {
	err := VerifyPin(Options{Inline: map[string]Inline{"triage": {Description: "d", Instructions: "i"}}}, "inline/triage", "sha256:"+strings.Repeat("0", 64))
	if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "inline Skill is not a package") {
		t.Fatalf("err = %v", err)
	}
}
