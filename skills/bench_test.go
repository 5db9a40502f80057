package skills

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkDiscover1000Packages measures discovery of 1,000 valid packages in
// one root. The reference admits at most MaxSkills, so this benchmark alone
// lifts that limit (and the aggregate metadata limit stays far away).
func BenchmarkDiscover1000Packages(b *testing.B) {
	dir := b.TempDir()
	makePackages(b, dir, 1000, 0)
	lim := referenceLimits
	lim.skills = 1000
	opts := Options{Roots: map[string]string{"bench": dir}}
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		cat, err := discover(ctx, opts, lim)
		if err != nil || len(cat.skills) != 1000 {
			b.Fatalf("%v", err)
		}
	}
}

// BenchmarkDiscoverAtSkillLimit measures the public Discover at the
// admitted-Skill limit (256 packages).
func BenchmarkDiscoverAtSkillLimit(b *testing.B) {
	dir := b.TempDir()
	makePackages(b, dir, MaxSkills, 0)
	opts := Options{Roots: map[string]string{"bench": dir}}
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		if _, err := Discover(ctx, opts); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDiscoverCorpus measures Discover over the skills corpus in
// testdata/corpus (its valid packages and every broken one).
func BenchmarkDiscoverCorpus(b *testing.B) {
	opts, _ := corpus(b)
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		if _, err := Discover(ctx, opts); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseFrontmatterCorpus measures ParseFrontmatter alone over
// every SKILL.md of testdata/corpus, read into memory once.
func BenchmarkParseFrontmatterCorpus(b *testing.B) {
	paths, err := filepath.Glob("testdata/corpus/*/*/SKILL.md")
	if err != nil || len(paths) == 0 {
		b.Fatalf("corpus: %v", err)
	}
	var files [][]byte
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		files = append(files, data)
	}
	b.ResetTimer()
	for b.Loop() {
		for _, f := range files {
			_, _ = ParseFrontmatter(f)
		}
	}
}
