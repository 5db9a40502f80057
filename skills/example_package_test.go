package skills_test

import (
	"archive/zip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/pabloagent/pablo/skills"
)

// A host names a package Skill by its archive, version and digest: the
// archive is checked against the digest, then read in memory; an archive
// that differs is refused with a *skills.DigestError.
func ExampleOptions_packages() {
	dir, err := os.MkdirTemp("", "skills-package-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	archive := filepath.Join(dir, "review-1.2.0.zip")
	f, err := os.Create(archive)
	if err != nil {
		log.Fatal(err)
	}
	zw := zip.NewWriter(f)
	w, _ := zw.Create("review/SKILL.md")
	w.Write([]byte("---\nname: review\ndescription: Reviews a change.\nmetadata:\n  version: 1.2.0\n---\nReview it.\n"))
	zw.Close()
	f.Close()
	data, _ := os.ReadFile(archive)
	sum := sha256.Sum256(data)
	digest := "sha256:" + hex.EncodeToString(sum[:])

	ctx := context.Background()
	cat, err := skills.Discover(ctx, skills.Options{Packages: map[string]skills.Package{
		"review": {Archive: archive, Version: "1.2.0", Digest: digest},
	}})
	if err != nil {
		log.Fatal(err)
	}
	s, err := cat.Lookup("package/review")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.QualifiedName, s.Source.Format, s.Bundle().Version)

	os.WriteFile(archive, append(data, 0), 0o644) // swapped after pinning
	cat, err = skills.Discover(ctx, skills.Options{Packages: map[string]skills.Package{
		"review": {Archive: archive, Version: "1.2.0", Digest: digest},
	}})
	if err != nil {
		log.Fatal(err)
	}
	_, err = cat.Activate(ctx, []string{"package/review"})
	var de *skills.DigestError
	fmt.Println("refused:", errors.As(err, &de), cat.Findings()[0].Code)
	// Output:
	// package/review archive 1.2.0
	// refused: true digest_mismatch
}
