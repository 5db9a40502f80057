package skills

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// gitRepo writes a bare repository object by object, so a test can store
// trees no work tree would hold (a '..' entry, a symlink, a submodule).
type gitRepo struct {
	t    testing.TB
	dir  string
	repo *git.Repository
}

type gitFile struct {
	mode filemode.FileMode
	data string
}

func newGitRepo(t testing.TB) *gitRepo {
	dir := t.TempDir()
	r, err := git.PlainInit(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	return &gitRepo{t: t, dir: dir, repo: r}
}

func (r *gitRepo) store(o interface {
	Encode(plumbing.EncodedObject) error
}, typ plumbing.ObjectType) plumbing.Hash {
	obj := r.repo.Storer.NewEncodedObject()
	obj.SetType(typ)
	if err := o.Encode(obj); err != nil {
		r.t.Fatal(err)
	}
	h, err := r.repo.Storer.SetEncodedObject(obj)
	if err != nil {
		r.t.Fatal(err)
	}
	return h
}

func (r *gitRepo) blob(data string) plumbing.Hash {
	o := r.repo.Storer.NewEncodedObject()
	o.SetType(plumbing.BlobObject)
	w, _ := o.Writer()
	w.Write([]byte(data))
	w.Close()
	h, err := r.repo.Storer.SetEncodedObject(o)
	if err != nil {
		r.t.Fatal(err)
	}
	return h
}

// tree stores files (slash paths) as nested trees; an entry's name is
// taken as given, so "../x" is one entry named "..", holding x.
func (r *gitRepo) tree(files map[string]gitFile) plumbing.Hash {
	dirs := map[string]map[string]gitFile{}
	var entries []object.TreeEntry
	for p, f := range files {
		if d, rest, ok := strings.Cut(p, "/"); ok {
			if dirs[d] == nil {
				dirs[d] = map[string]gitFile{}
			}
			dirs[d][rest] = f
			continue
		}
		mode := f.mode
		if mode == 0 {
			mode = filemode.Regular
		}
		h := plumbing.ZeroHash
		if mode != filemode.Submodule {
			h = r.blob(f.data)
		}
		entries = append(entries, object.TreeEntry{Name: p, Mode: mode, Hash: h})
	}
	for d, fs := range dirs {
		entries = append(entries, object.TreeEntry{Name: d, Mode: filemode.Dir, Hash: r.tree(fs)})
	}
	key := func(e object.TreeEntry) string {
		if e.Mode == filemode.Dir {
			return e.Name + "/"
		}
		return e.Name
	}
	slices.SortFunc(entries, func(a, b object.TreeEntry) int { return strings.Compare(key(a), key(b)) })
	return r.store(&object.Tree{Entries: entries}, plumbing.TreeObject)
}

// commit stores a commit of files, moves refs/heads/main to it and returns
// its hash.
func (r *gitRepo) commit(files map[string]gitFile) plumbing.Hash {
	sig := object.Signature{Name: "t", Email: "t@invalid", When: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	h := r.store(&object.Commit{Author: sig, Committer: sig, Message: "c\n", TreeHash: r.tree(files)}, plumbing.CommitObject)
	r.ref("refs/heads/main", h)
	return h
}

func (r *gitRepo) ref(name string, h plumbing.Hash) {
	if err := r.repo.Storer.SetReference(plumbing.NewHashReference(plumbing.ReferenceName(name), h)); err != nil {
		r.t.Fatal(err)
	}
}

// annotatedTag stores an annotated tag of target named name.
func (r *gitRepo) annotatedTag(name string, target plumbing.Hash) {
	sig := object.Signature{Name: "t", Email: "t@invalid", When: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	h := r.store(&object.Tag{Name: name, Tagger: sig, Message: "v\n", TargetType: plumbing.CommitObject, Target: target}, plumbing.TagObject)
	r.ref("refs/tags/"+name, h)
}

func TestGitPackageFlowsThroughDiscoveryActivationAndRead(t *testing.T) {
	ctx := context.Background()
	r := newGitRepo(t)
	pkg := map[string]gitFile{"skills/review/SKILL.md": {data: reviewSkill}, "skills/review/docs/checklist.md": {data: "- tests\n"},
		"skills/review/run.sh": {mode: filemode.Executable, data: "echo\n"}, "README.md": {data: "repo\n"}}
	c1 := r.commit(pkg)
	r.annotatedTag("v1.2.0", c1)
	// A checkout of the subdirectory has the digest the pin holds.
	dir := filepath.Join(t.TempDir(), "review")
	os.MkdirAll(filepath.Join(dir, "docs"), 0o700)
	os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(reviewSkill), 0o600)
	os.WriteFile(filepath.Join(dir, "docs", "checklist.md"), []byte("- tests\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "run.sh"), []byte("echo\n"), 0o700)
	digest, err := PackageDigest(dir)
	if err != nil {
		t.Fatal(err)
	}
	r.commit(map[string]gitFile{"skills/review/SKILL.md": {data: strings.Replace(reviewSkill, "1.2.0", "1.3.0", 1)}})
	for _, ref := range []string{"v1.2.0", "refs/tags/v1.2.0", c1.String()} {
		for _, repo := range []string{r.dir, "file://" + r.dir} {
			opts := Options{Packages: map[string]Package{"review": {Git: &GitSource{Repo: repo, Ref: ref, Subdir: "skills/review"}, Version: "1.2.0", Digest: digest}}}
			cat, err := Discover(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			s, err := cat.Lookup("package/review")
			if err != nil || s.Source == nil || s.Source.Commit != c1.String() || s.Source.Format != "git" || s.Source.Ref != ref {
				t.Fatalf("%s at %s: %+v, %v (findings %v)", repo, ref, s, err, cat.Findings())
			}
			act, err := cat.Activate(ctx, []string{"review"})
			if err != nil {
				t.Fatal(err)
			}
			if res, err := act.Read(ctx, ReadArguments{Skill: "package/review", Path: "docs/checklist.md"}, ReadOptions{}); err != nil || res.Text != "- tests\n" {
				t.Fatalf("read: %+v, %v", res, err)
			}
		}
	}
	// The branch has moved on: its Skill declares 1.3.0, so asking for
	// 1.2.0 (or the old digest) at main fails.
	opts := Options{Packages: map[string]Package{"review": {Git: &GitSource{Repo: r.dir, Ref: "main", Subdir: "skills/review"}, Version: "1.2.0", Digest: digest}}}
	cat, err := Discover(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if f := cat.Findings(); len(f) != 1 || f[0].Code != CodeDigestMismatch {
		t.Fatalf("findings at main: %v", f)
	}
}

func TestGitPackageRefusedAtItsSource(t *testing.T) {
	ctx := context.Background()
	r := newGitRepo(t)
	skill := gitFile{data: "---\nname: review\ndescription: d\n---\nx\n"}
	good := r.commit(map[string]gitFile{"SKILL.md": skill})
	zero := "sha256:" + strings.Repeat("0", 64)
	cases := map[string]struct {
		g    GitSource
		kind error
		code Code
	}{
		"unknown tag":       {GitSource{Repo: r.dir, Ref: "v9.9.9"}, ErrRefUnresolved, CodeRefUnresolved},
		"unknown commit":    {GitSource{Repo: r.dir, Ref: strings.Repeat("a", 40)}, ErrRefUnresolved, CodeRefUnresolved},
		"missing repo":      {GitSource{Repo: filepath.Join(t.TempDir(), "none"), Ref: "main"}, ErrNotFound, CodeSourceMissing},
		"missing subdir":    {GitSource{Repo: r.dir, Ref: "main", Subdir: "skills/none"}, ErrNotFound, CodeSourceMissing},
		"subdir climbs out": {GitSource{Repo: r.dir, Ref: "main", Subdir: "../x"}, ErrInvalidOptions, CodeInvalidPath},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			cat, err := Discover(ctx, Options{Packages: map[string]Package{"review": {Git: &c.g, Digest: zero}}})
			if err != nil {
				t.Fatal(err)
			}
			if f := cat.Findings(); len(cat.Skills()) != 0 || len(f) != 1 || f[0].Code != c.code {
				t.Fatalf("findings = %v", f)
			}
			if _, err := cat.Activate(ctx, []string{"package/review"}); !errors.Is(err, c.kind) || CodeOf(err) != c.code {
				t.Fatalf("activation: %v", err)
			}
		})
	}
	for name, tc := range map[string]struct {
		files map[string]gitFile
		kind  error
	}{
		"symlink":         {map[string]gitFile{"SKILL.md": skill, "link": {mode: filemode.Symlink, data: "/etc/passwd"}}, ErrUnsafePath},
		"submodule":       {map[string]gitFile{"SKILL.md": skill, "sub": {mode: filemode.Submodule}}, ErrUnsafePath},
		"dot-dot entry":   {map[string]gitFile{"SKILL.md": skill, "../evil": {data: "x"}}, ErrUnsafePath},
		"no SKILL.md":     {map[string]gitFile{"README.md": {data: "x"}}, ErrInvalidPackage},
		"huge file":       {map[string]gitFile{"SKILL.md": skill, "big": {data: strings.Repeat("a", MaxPackageFileBytes+1)}}, ErrLimitExceeded},
		"backslash entry": {map[string]gitFile{"SKILL.md": skill, `a\b`: {data: "x"}}, ErrUnsafePath},
	} {
		t.Run(name, func(t *testing.T) {
			h := r.commit(tc.files)
			_, _, err := readGitPackage(ctx, GitSource{Repo: r.dir, Ref: h.String()}, nil)
			if !errors.Is(err, tc.kind) {
				t.Fatalf("err = %v", err)
			}
		})
	}
	if _, commit, err := readGitPackage(ctx, GitSource{Repo: r.dir, Ref: good.String()}, nil); err != nil || commit != good.String() {
		t.Fatalf("the good commit: %s, %v", commit, err)
	}
}

// TestGitPackageFromALinkedWorkTreeOrAGitFile: a repository named by a
// linked work tree (a .git file pointing at .git/worktrees/NAME, whose
// commondir holds the objects and refs) or by a directory whose .git file
// names a separate git directory (relative path) is opened as git opens
// it: the branch resolves through the common refs, HEAD is the work
// tree's own, and nothing is fetched. A .git file naming nothing is
// source_missing.
func TestGitPackageFromALinkedWorkTreeOrAGitFile(t *testing.T) {
	ctx := context.Background()
	r := newGitRepo(t)
	skill := func(v string) gitFile {
		return gitFile{data: "---\nname: review\ndescription: d\nmetadata:\n  version: " + v + "\n---\nReview " + v + ".\n"}
	}
	r.commit(map[string]gitFile{"SKILL.md": skill("1.0.0")})
	feature := r.commit(map[string]gitFile{"SKILL.md": skill("2.0.0")})
	r.ref("refs/heads/feature", feature)
	r.commit(map[string]gitFile{"SKILL.md": skill("3.0.0")}) // main moves on
	write := func(path, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// git worktree add WT feature, laid out by hand.
	wt := filepath.Join(t.TempDir(), "wt")
	admin := filepath.Join(r.dir, "worktrees", "wt")
	write(filepath.Join(admin, "HEAD"), "ref: refs/heads/feature\n")
	write(filepath.Join(admin, "commondir"), "../..\n")
	write(filepath.Join(admin, "gitdir"), filepath.Join(wt, ".git")+"\n")
	write(filepath.Join(wt, ".git"), "gitdir: "+admin+"\n")
	checkout := filepath.Join(t.TempDir(), "review")
	write(filepath.Join(checkout, "SKILL.md"), skill("2.0.0").data)
	digest, err := PackageDigest(checkout)
	if err != nil {
		t.Fatal(err)
	}
	// git init --separate-git-dir: a relative gitdir line.
	sep := filepath.Join(t.TempDir(), "sep")
	rel, err := filepath.Rel(sep, r.dir)
	if err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(sep, ".git"), "gitdir: "+rel+"\n")

	for _, c := range []struct{ repo, ref string }{{wt, "HEAD"}, {wt, "feature"}, {"file://" + wt, "feature"}, {sep, "feature"}, {sep, feature.String()}} {
		cat, err := Discover(ctx, Options{Packages: map[string]Package{"review": {Git: &GitSource{Repo: c.repo, Ref: c.ref}, Version: "2.0.0", Digest: digest}}})
		if err != nil {
			t.Fatal(err)
		}
		s, err := cat.Lookup("package/review")
		if err != nil || s.Source.Commit != feature.String() {
			t.Fatalf("%s at %s: %+v, %v (findings %v)", c.repo, c.ref, s, err, cat.Findings())
		}
	}
	// An authority layer bounding skill_roots to the work tree's directory
	// does not admit the git directory its .git file names elsewhere; with
	// the repository's directory allowed too, it does.
	for _, c := range []struct {
		allowed []string
		admit   bool
	}{{[]string{filepath.Dir(wt)}, false}, {[]string{filepath.Dir(wt), r.dir}, true}} {
		cat, err := Discover(ctx, Options{Contained: WithinDirs(c.allowed),
			Packages: map[string]Package{"review": {Git: &GitSource{Repo: wt, Ref: "feature"}, Version: "2.0.0", Digest: digest}}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = cat.Lookup("package/review")
		if got := err == nil; got != c.admit {
			t.Fatalf("allowed %v: admitted %v, want %v (%v; findings %v)", c.allowed, got, c.admit, err, cat.Findings())
		}
		if !c.admit && (len(cat.Findings()) != 1 || cat.Findings()[0].Code != CodeRootDenied) {
			t.Fatalf("allowed %v: findings %v, want one %s", c.allowed, cat.Findings(), CodeRootDenied)
		}
	}
	// The bare repository's own HEAD names no branch that exists; the work
	// tree's HEAD is its own.
	if _, _, err := readGitPackage(ctx, GitSource{Repo: r.dir, Ref: "HEAD"}, nil); !errors.Is(err, ErrRefUnresolved) {
		t.Fatalf("HEAD of the bare repository: %v", err)
	}
	for name, text := range map[string]string{"no gitdir line": "not a pointer\n", "gitdir names nothing": "gitdir: " + filepath.Join(t.TempDir(), "none") + "\n"} {
		bad := filepath.Join(t.TempDir(), "bad")
		write(filepath.Join(bad, ".git"), text)
		if _, _, err := readGitPackage(ctx, GitSource{Repo: bad, Ref: "main"}, nil); !errors.Is(err, ErrNotFound) || CodeOf(err) != CodeSourceMissing {
			t.Errorf("%s: %v", name, err)
		}
	}
}
