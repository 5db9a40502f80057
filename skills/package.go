package skills

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
)

// PackageRoot is the root ID of the package Skills a deployment names
// (options.skills.packages): their qualified names are package/NAME, so no
// configured root may use this ID alongside them.
const PackageRoot = "package"

// MaxPackages bounds the package Skills of one catalog: each is held in
// memory, up to MaxPackageBytes.
const MaxPackages = 8

// Package is a Skill package read from a versioned archive or a git ref
// and pinned by digest (seed 002's package source format). Exactly one of
// Archive and Git is set. It is read in memory, never extracted, and
// admitted as PackageRoot/NAME once its digest matches; its SKILL.md's
// frontmatter goes through the same strict walk, its name must equal
// NAME and, when Version is set, its metadata version must equal Version.
type Package struct {
	// Archive is the absolute path of a .tar.gz, .tgz or .zip archive
	// holding SKILL.md at its root or in its one top-level directory.
	Archive string `json:"archive,omitempty"`
	// Git reads the package from a local git repository at a ref.
	Git *GitSource `json:"git,omitempty"`
	// Version, when set, is the version the Skill's metadata must declare.
	Version string `json:"version,omitempty"`
	// Digest pins the package ("sha256:" and 64 lowercase hex digits): of
	// the archive's bytes for Archive, PackageDigest's over the tree for
	// Git.
	Digest string `json:"digest"`
}

// Source says where a Skill that is not a root's directory came from: the
// catalog's record of a file or package source.
type Source struct {
	// Format is "file", "archive" or "git".
	Format string `json:"format"`
	// Locator is the file, archive or repository path.
	Locator string `json:"locator"`
	// Ref and Commit are a git package's ref and the commit it resolved
	// to when the catalog was built.
	Ref    string `json:"ref,omitempty"`
	Commit string `json:"commit,omitempty"`
	// Subdir is a git package's directory in the tree.
	Subdir string `json:"subdir,omitempty"`
	// Version is the version the deployment asked for, if any.
	Version string `json:"version,omitempty"`
	// Digest is the verified digest of a package.
	Digest string `json:"digest,omitempty"`
}

// checkPackage validates one package's options.
func checkPackage(name string, p Package) error {
	what := "package " + name
	switch {
	case (p.Archive == "") == (p.Git == nil):
		return &Error{Kind: ErrInvalidOptions, Code: CodeInvalidSelection, Reason: what + ": give exactly one of an archive and a git source"}
	case p.Archive != "" && ArchiveFormatOf(p.Archive) == 0:
		return &Error{Kind: ErrInvalidOptions, Code: CodeInvalidPath, Reason: what + ": the archive must be a .tar.gz, .tgz or .zip file"}
	case p.Git != nil && p.Git.Ref == "":
		return &Error{Kind: ErrInvalidOptions, Code: CodeInvalidSelection, Reason: what + ": a git source needs a ref (a tag, a branch or a full commit hash)"}
	}
	if err := checkDigest(what, p.Digest); err != nil {
		return err
	}
	if p.Archive != "" {
		return checkSourcePath(what, p.Archive)
	}
	dir, err := gitRepoPath(p.Git.Repo)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			e.Reason = what + ": " + e.Reason
		}
		return err
	}
	return checkSourcePath(what, dir)
}

// locator is the path a package is read from.
func (p Package) locator() string {
	if p.Git != nil {
		dir, _ := gitRepoPath(p.Git.Repo)
		return dir
	}
	return p.Archive
}

// loadPackage reads and verifies one package: its digest, then its tree.
// within, when not nil, must admit a git package's git directories.
func loadPackage(ctx context.Context, qn string, p Package, within func(dir string) bool) (*tree, Source, error) {
	if p.Git != nil {
		src := Source{Format: "git", Locator: p.locator(), Ref: p.Git.Ref, Subdir: p.Git.Subdir, Version: p.Version}
		t, commit, err := readGitPackage(ctx, *p.Git, within)
		if err != nil {
			return nil, src, err
		}
		src.Commit = commit
		if got := treeDigest(t.files); got != p.Digest {
			return nil, src, &DigestError{Dir: qn, Expected: p.Digest, Actual: got}
		}
		src.Digest = p.Digest
		return t, src, nil
	}
	src := Source{Format: "archive", Locator: p.Archive, Version: p.Version}
	data, err := readArchiveFile(p.Archive)
	if err != nil {
		return nil, src, err
	}
	if got := archiveDigest(data); got != p.Digest {
		return nil, src, &DigestError{Dir: qn, Expected: p.Digest, Actual: got}
	}
	t, err := readArchive(data, ArchiveFormatOf(p.Archive))
	if err != nil {
		return nil, src, err
	}
	src.Digest = p.Digest
	return t, src, nil
}

// readArchiveFile reads an archive file, bounded, without following a
// symlink in its last element.
func readArchiveFile(path string) ([]byte, error) {
	f, st, prob, err := openSingleFile(path, nil)
	switch prob {
	case probNone:
	case probMissing:
		return nil, &Error{Kind: ErrNotFound, Code: CodeSourceMissing, Reason: "the archive does not exist; create it or fix the archive path"}
	case probSymlink, probWrongType:
		return nil, &Error{Kind: ErrUnsafePath, Code: CodeNotFile, Reason: "the archive is a symlink or not a regular file"}
	default:
		return nil, &Error{Kind: ErrIO, Code: CodeIOError, Reason: "the archive cannot be opened", Err: err}
	}
	defer f.Close()
	if st.Size() > MaxPackageSourceBytes {
		return nil, limitError(fmt.Sprintf("the archive has %d bytes; the limit is %d", st.Size(), MaxPackageSourceBytes))
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxPackageSourceBytes+1))
	if err != nil {
		return nil, &Error{Kind: ErrIO, Code: CodeIOError, Reason: "the archive cannot be read", Err: err}
	}
	if len(data) > MaxPackageSourceBytes {
		return nil, limitError(fmt.Sprintf("the archive has more than %d bytes", MaxPackageSourceBytes))
	}
	return data, nil
}

// packages admits the options' package Skills. A package that cannot be
// read, differs from its digest or declares another version is a finding,
// and activating it fails with that error.
func (d *discoverer) packages(ctx context.Context, opts Options) error {
	for _, name := range slices.Sorted(maps.Keys(opts.Packages)) {
		if err := ctx.Err(); err != nil {
			return stopped(err)
		}
		p := opts.Packages[name]
		qn := PackageRoot + "/" + name
		if opts.Contained != nil && !opts.Contained(PackageRoot, p.locator()) {
			d.refuse(PackageRoot, name, &Error{Kind: ErrNotFound, Code: CodeRootDenied, Skill: qn,
				Reason: "the package's archive or repository lies outside every physical skill root the authority layers allow; add its directory to authority skill_roots or remove options.skills.packages." + name})
			continue
		}
		var within func(string) bool
		if opts.Contained != nil {
			within = func(dir string) bool { return opts.Contained(PackageRoot, dir) }
		}
		t, src, err := loadPackage(ctx, qn, p, within)
		if cerr := ctx.Err(); cerr != nil {
			return stopped(cerr)
		}
		if err != nil {
			d.refuse(PackageRoot, name, err)
			continue
		}
		raw, _, err := readFrontmatter(bytes.NewReader(t.files[SkillFile]))
		if err != nil {
			d.refuse(PackageRoot, name, err)
			continue
		}
		if err := d.chargeMeta(len(raw)); err != nil {
			return err
		}
		fm, err := named(name, raw)
		if err != nil {
			d.refuse(PackageRoot, name, err)
			continue
		}
		if got := (Skill{Frontmatter: fm}).Bundle().Version; p.Version != "" && got != p.Version {
			declared := "declares no version"
			if got != "" {
				declared = "declares version " + strconv.Quote(got)
			}
			d.refuse(PackageRoot, name, &Error{Kind: ErrVersionUnresolved, Code: CodeVersionUnresolved, Skill: qn,
				Reason: fmt.Sprintf("version %s does not resolve: the package's SKILL.md %s; fix options.skills.packages.%s.version or the package", strconv.Quote(p.Version), declared, name)})
			continue
		}
		d.add(PackageRoot, name+"/"+SkillFile, raw, fm).Source = &src
		if d.cat.trees == nil {
			d.cat.trees = map[string]*tree{}
		}
		d.cat.trees[qn] = t
	}
	return nil
}

// refuse records a file or package source that is not admitted: a finding
// with err's code, and err itself for a Lookup or Activate of its name.
func (d *discoverer) refuse(root, name string, err error) {
	qn := root + "/" + name
	var (
		de *DigestError
		e  *Error
	)
	switch {
	case errors.As(err, &de):
		d.finding(root, name, CodeDigestMismatch, de.Error())
	case errors.As(err, &e):
		if e.Skill == "" {
			e.Skill = qn
		}
		d.finding(root, name, e.Code, e.Reason)
	default:
		err = &Error{Kind: ErrIO, Code: CodeIOError, Skill: qn, Reason: "the source cannot be read", Err: err}
		d.finding(root, name, CodeIOError, "the source cannot be read")
	}
	if d.cat.refused == nil {
		d.cat.refused = map[string]error{}
	}
	d.cat.refused[qn] = err
}

// read returns a package file held in memory for skill.read.
func (t *tree) read(path string) ([]byte, problem) {
	if data, ok := t.files[path]; ok {
		return data, probNone
	}
	if t.dirs[path] {
		return nil, probWrongType
	}
	return nil, probMissing
}
