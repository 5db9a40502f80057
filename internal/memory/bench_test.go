package memory

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// benchRepo generates a repository of nRecords records (over 20 kinds, in
// 100 directories) and nDocs docs, and a second commit with changes
// records edited. It returns the two pins.
func benchRepo(b *testing.B, nRecords, nDocs, changes int) (*testRepo, Pin, Pin) {
	b.Helper()
	r := newTestRepo(b)
	files := make(map[string]tfile, nRecords+nDocs)
	for i := range nRecords {
		kind := fmt.Sprintf("kind%02d", i%20)
		id := fmt.Sprintf("rec-%05d", i)
		files[fmt.Sprintf("records/d%02d/%s.md", i%100, id)] = record(id, kind,
			fmt.Sprintf("owner: team-%d", i%50), fmt.Sprintf("repo: acme/r%d", i%300), "stack: go",
			fmt.Sprintf("associations: [rec-%05d]", (i+1)%nRecords), "edges:", fmt.Sprintf("  depends_on: [rec-%05d]", (i+7)%nRecords),
			fmt.Sprintf("body:Record %d describes component %d of system %d.\n%s", i, i%97, i%13, strings.Repeat("Lorem ipsum dolor sit amet. ", 8)))
	}
	for i := range nDocs {
		files[fmt.Sprintf("handbook/s%02d/doc-%04d.md", i%40, i)] = text(fmt.Sprintf("# Doc %d\n\n%s\nThe runbook step %d restarts service %d.\n", i, strings.Repeat("Some prose about operations.\n", 20), i, i%31))
	}
	first := Pin{Ref: "refs/heads/main", Commit: r.commit(files)}
	for i := range changes {
		id := fmt.Sprintf("rec-%05d", i*(nRecords/changes))
		idx := i * (nRecords / changes)
		files[fmt.Sprintf("records/d%02d/%s.md", idx%100, id)] = record(id, "kind00", "owner: someone-else", "body:changed")
	}
	second := Pin{Ref: "refs/heads/main", Commit: r.commit(files)}
	// A real repository's objects are packed; pack these with git when it
	// is installed (the reading side never runs git).
	if gitBin, err := exec.LookPath("git"); err == nil {
		if out, err := exec.Command(gitBin, "--git-dir", r.dir, "gc", "-q").CombinedOutput(); err != nil {
			b.Fatalf("git gc: %v\n%s", err, out)
		}
	}
	return r, first, second
}

// BenchmarkIndexBuild is the first index build of a commit (read every
// record blob, parse strictly, index), at a quarter and at the full size
// of 10,000 records and 2,000 docs: the two figures show the build is
// linear in the records.
func BenchmarkIndexBuild(b *testing.B) {
	for _, n := range []int{2_500, 10_000} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			r, first, _ := benchRepo(b, n, n/5, 100)
			b.ResetTimer()
			for b.Loop() {
				s := r.store(Options{Cache: NewCache(1)})
				if _, err := s.Index(context.Background(), first); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSearch is a two-word text search with a kind filter over the
// built index.
func BenchmarkSearch(b *testing.B) {
	r, first, _ := benchRepo(b, 10_000, 2_000, 100)
	ix, err := r.store(Options{}).Index(context.Background(), first)
	if err != nil {
		b.Fatal(err)
	}
	scope := All()
	b.ResetTimer()
	for b.Loop() {
		p, _ := ix.Search(Query{Text: "component 42", Kind: "kind02"}, scope)
		if p.Total == 0 {
			b.Fatal("no match")
		}
	}
}

// BenchmarkGrep is a literal grep over all 2,000 docs, first page.
func BenchmarkGrep(b *testing.B) {
	r, first, _ := benchRepo(b, 10_000, 2_000, 100)
	s := r.store(Options{})
	ix, err := s.Index(context.Background(), first)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		// A rare literal: every doc is read.
		if _, err := s.Grep(context.Background(), ix, GrepQuery{Pattern: "restarts service 30."}, All()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDiff100 is the diff between two commits 100 record edits apart.
func BenchmarkDiff100(b *testing.B) {
	r, first, second := benchRepo(b, 10_000, 2_000, 100)
	s := r.store(Options{})
	b.ResetTimer()
	for b.Loop() {
		d, err := s.Diff(context.Background(), first, second, All(), 0, 100)
		if err != nil || d.Total != 100 {
			b.Fatalf("diff = %d changes, %v", d.Total, err)
		}
	}
}

// BenchmarkDiff100Bounded is BenchmarkDiff100 under a grant of half the
// kinds, as a task's diff runs: each side of a changed record is compared
// as the grant sees it, through the pin's index (built when the task
// started, so not timed here).
func BenchmarkDiff100Bounded(b *testing.B) {
	r, first, second := benchRepo(b, 10_000, 2_000, 100)
	s := r.store(Options{})
	if _, err := s.Index(context.Background(), first); err != nil {
		b.Fatal(err)
	}
	scope := Scope{Paths: []string{"*"}}
	for i := range 10 {
		scope.Kinds = append(scope.Kinds, fmt.Sprintf("kind%02d", i))
	}
	b.ResetTimer()
	for b.Loop() {
		d, err := s.Diff(context.Background(), first, second, scope, 0, 100)
		if err != nil || d.Total != 100 {
			b.Fatalf("diff = %d changes, %v", d.Total, err)
		}
	}
}
