package skills

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// A Skill package may be pinned by digest (seed 002's package source
// format): the digest of its directory is computed here, and a package
// whose digest is not the pinned one is refused with a *DigestError.

// ErrDigestMismatch reports a Skill package whose digest is not the one
// it was pinned by.
var ErrDigestMismatch = errors.New("skills: package digest mismatch")

// CodeDigestMismatch: a pinned package's digest differs.
const CodeDigestMismatch Code = "digest_mismatch"

// Bounds of a package digest: more entries or bytes fail with
// ErrLimitExceeded rather than hash without end.
const (
	maxDigestEntries = 4096
	maxDigestBytes   = 64 << 20
)

// DigestError is a pinned package whose digest differs: it names both.
type DigestError struct {
	// Dir is the package directory.
	Dir string
	// Expected is the pinned digest, Actual the package's.
	Expected, Actual string
}

func (e *DigestError) Error() string {
	return fmt.Sprintf("skills: package %s has digest %s, not the pinned %s", strconv.Quote(e.Dir), e.Actual, e.Expected)
}

// Is makes errors.Is(err, ErrDigestMismatch) hold.
func (e *DigestError) Is(target error) bool { return target == ErrDigestMismatch }

// digestPattern is a pinned digest: sha256: and 64 lowercase hex digits.
var digestPattern = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// PackageDigest returns the digest of the Skill package in dir, as
// "sha256:" and lowercase hex: SHA-256 over each regular file's
// slash-separated path, size and bytes, in path order. dir itself must not
// be a symlink; a symlink, device, FIFO or socket inside it fails with
// ErrUnsafePath (a digest never depends on what a link points to), and
// more than 4,096 entries or 64 MiB with ErrLimitExceeded.
func PackageDigest(dir string) (string, error) {
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", &Error{Kind: ErrIO, Code: CodeIOError, Path: dir, Reason: "the package cannot be read", Err: err}
	}
	if !fi.IsDir() {
		return "", &Error{Kind: ErrUnsafePath, Code: CodePackageNotDirectory, Path: dir, Reason: "the package is not a directory (a symlink is refused)"}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", &Error{Kind: ErrIO, Code: CodeIOError, Path: dir, Reason: "the package cannot be opened", Err: err}
	}
	defer root.Close()
	type entry struct {
		path string
		size int64
	}
	var files []entry
	var total int64
	entries := 0
	walk := fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return &Error{Kind: ErrIO, Code: CodeIOError, Path: p, Reason: "the package cannot be read", Err: err}
		}
		if entries++; entries > maxDigestEntries {
			return &Error{Kind: ErrLimitExceeded, Code: CodeLimitExceeded, Path: dir, Reason: fmt.Sprintf("more than %d entries in the package", maxDigestEntries)}
		}
		switch t := d.Type(); {
		case t.IsDir():
			return nil
		case !t.IsRegular():
			return &Error{Kind: ErrUnsafePath, Code: CodePackageSymlink, Path: p, Reason: "the package holds a symlink or special file; a pinned package holds only directories and regular files"}
		}
		info, err := d.Info()
		if err != nil {
			return &Error{Kind: ErrIO, Code: CodeIOError, Path: p, Reason: "the package cannot be read", Err: err}
		}
		if total += info.Size(); total > maxDigestBytes {
			return &Error{Kind: ErrLimitExceeded, Code: CodeLimitExceeded, Path: dir, Reason: fmt.Sprintf("the package holds more than %d bytes", maxDigestBytes)}
		}
		files = append(files, entry{p, info.Size()})
		return nil
	})
	if walk != nil {
		return "", walk
	}
	slices.SortFunc(files, func(a, b entry) int {
		switch {
		case a.path < b.path:
			return -1
		case a.path > b.path:
			return 1
		}
		return 0
	})
	h := sha256.New()
	for _, f := range files {
		file, err := root.Open(f.path)
		if err != nil {
			return "", &Error{Kind: ErrIO, Code: CodeIOError, Path: f.path, Reason: "the package cannot be read", Err: err}
		}
		fi, err := file.Stat()
		if err != nil || !fi.Mode().IsRegular() || fi.Size() != f.size {
			file.Close()
			return "", &Error{Kind: ErrChanged, Code: CodeChanged, Path: f.path, Reason: "the file changed while the package was hashed"}
		}
		fmt.Fprintf(h, "%s\x00%d\x00", f.path, f.size)
		n, err := io.Copy(h, io.LimitReader(file, f.size))
		file.Close()
		if err != nil || n != f.size {
			return "", &Error{Kind: ErrChanged, Code: CodeChanged, Path: f.path, Reason: "the file changed while the package was hashed", Err: err}
		}
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// treeDigest is PackageDigest's digest of a package held in memory: files
// maps each regular file's slash-separated path to its bytes.
func treeDigest(files map[string][]byte) string {
	h := sha256.New()
	for _, p := range slices.Sorted(maps.Keys(files)) {
		fmt.Fprintf(h, "%s\x00%d\x00", p, len(files[p]))
		h.Write(files[p])
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// checkDigest reports a malformed pin want with ErrInvalidOptions.
func checkDigest(where, want string) error {
	if digestPattern.MatchString(want) {
		return nil
	}
	q := want
	if len(q) > 80 {
		q = q[:80]
	}
	return &Error{Kind: ErrInvalidOptions, Code: CodeInvalidSelection, Path: where,
		Reason: fmt.Sprintf("digest %s: want sha256: and 64 lowercase hex digits", strconv.Quote(q))}
}

// VerifyPackage checks the Skill package in dir against its pinned digest
// want ("sha256:" and 64 lowercase hex digits): a malformed pin fails with
// ErrInvalidOptions, a package that differs with a *DigestError naming
// the expected and actual digests.
func VerifyPackage(dir, want string) error {
	if err := checkDigest(dir, want); err != nil {
		return err
	}
	got, err := PackageDigest(dir)
	if err != nil {
		return err
	}
	if got != want {
		return &DigestError{Dir: dir, Expected: want, Actual: got}
	}
	return nil
}

// VerifyPins checks each pinned package (ROOT/NAME to digest,
// options.skills.pins) under opts' roots, in name order: the first that
// differs, or names an unknown root, is the error.
func VerifyPins(opts Options, pins map[string]string) error {
	for _, qn := range slices.Sorted(maps.Keys(pins)) {
		if err := VerifyPin(opts, qn, pins[qn]); err != nil {
			return err
		}
	}
	return nil
}

// VerifyPin checks the package of the Skill qn (ROOT/NAME) under opts'
// roots against digest want. A single-file Skill (file/NAME) is checked
// by FileDigest. An inline Skill is no package and a package Skill
// carries its own digest, so a pin of either fails with
// ErrInvalidOptions saying so.
func VerifyPin(opts Options, qn, want string) error {
	root, name, _ := strings.Cut(qn, "/")
	dir, ok := opts.Roots[root]
	switch path, file := opts.Files[name]; {
	case ok:
	case root == InlineRoot:
		return &Error{Kind: ErrInvalidOptions, Code: CodeInvalidSelection, Skill: qn,
			Reason: "an inline Skill is not a package and has no digest to pin: the deployment's fingerprint covers it; remove the pin"}
	case root == PackageRoot:
		return &Error{Kind: ErrInvalidOptions, Code: CodeInvalidSelection, Skill: qn,
			Reason: "a package in options.skills.packages is pinned by its own digest field; remove the pin from options.skills.pins"}
	case root == FileRoot && file:
		if err := checkDigest(qn, want); err != nil {
			return err
		}
		got, err := FileDigest(path)
		if err != nil {
			return err
		}
		if got != want {
			return &DigestError{Dir: qn, Expected: want, Actual: got}
		}
		return nil
	}
	if !ok || name == "" || strings.ContainsAny(name, `/\`) || name == "." || name == ".." {
		return &Error{Kind: ErrNotFound, Code: CodeNotFound, Skill: qn, Reason: "a pinned Skill names no configured root and package"}
	}
	if err := VerifyPackage(filepath.Join(dir, name), want); err != nil {
		var de *DigestError
		if errors.As(err, &de) {
			de.Dir = qn
		}
		return err
	}
	return nil
}
