package children

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"unicode/utf8"
)

// DefaultMaxArtifactBytes bounds what [RootVerifier] hashes when its
// MaxBytes is zero.
const DefaultMaxArtifactBytes = 64 << 20

// RootVerifier is the [ArtifactVerifier] over a workspace opened as an
// *os.Root: right before the receiving child starts it checks that the
// child has fs.read, that the host's read policy allows the path (Read),
// and then opens the file without following any symlink (each directory
// inspected with Lstat, opened, and checked to be the one inspected; the
// file itself a regular file opened O_NOFOLLOW and checked to be the one
// inspected) and streams it through SHA-256. Any difference from the
// artifact's revision, a missing file, a symlink or a swap is
// stale_artifact.
type RootVerifier struct {
	// Root is the workspace. Required.
	Root *os.Root
	// Read is the receiving child's narrowed read policy (its read roots):
	// an error refuses the path. Nil allows every path inside Root to a
	// child that has fs.read.
	Read func(spec Spec, path string) error
	// MaxBytes bounds the file; zero is DefaultMaxArtifactBytes.
	MaxBytes int64

	// betweenCheckAndOpen, when set (by this package's tests), runs after
	// the final component was inspected and before it is opened.
	betweenCheckAndOpen func()
}

// VerifyArtifact implements [ArtifactVerifier].
func (v *RootVerifier) VerifyArtifact(ctx context.Context, spec Spec, a Artifact) error {
	const field = "request.handoffs"
	if v.Root == nil {
		return errorf(CodeHandoffRefused, field, "the verifier has no workspace")
	}
	if !slices.Contains(spec.Capabilities.Tools, "fs.read") {
		return errorf(CodeHandoffRefused, field, "the receiving child has no fs.read: an artifact handoff needs it")
	}
	parts, err := artifactPath(a.Path)
	if err != nil {
		return err
	}
	if !validRevision(a.Revision) {
		return errorf(CodeOutOfRange, field, "the revision must be 64 lowercase hex digits (fs.read's revision)")
	}
	if v.Read != nil {
		if err := v.Read(spec, a.Path); err != nil {
			return &Error{Code: CodeStaleArtifact, Field: field, Reason: "the receiving child may not read " + quote(a.Path) + ": " + err.Error(), Err: err}
		}
	}
	stale := func(reason string, cause error) error {
		return &Error{Code: CodeStaleArtifact, Field: field, Reason: quote(a.Path) + " " + reason, Err: cause}
	}
	dir, err := v.Root.OpenRoot(".")
	if err != nil {
		return stale("cannot be opened", err)
	}
	defer func() { dir.Close() }()
	for _, name := range parts[:len(parts)-1] {
		fi, err := dir.Lstat(name)
		if err != nil {
			return stale("is gone", err)
		}
		if !fi.IsDir() || fi.Mode()&fs.ModeSymlink != 0 {
			return stale("has a component that is not a directory (or is a symlink)", nil)
		}
		next, err := dir.OpenRoot(name)
		if err != nil {
			return stale("was replaced while being opened", err)
		}
		if st, err := next.Stat("."); err != nil || !os.SameFile(fi, st) {
			next.Close()
			return stale("was replaced while being opened", err)
		}
		dir.Close()
		dir = next
	}
	name := parts[len(parts)-1]
	fi, err := dir.Lstat(name)
	if err != nil {
		return stale("is gone", err)
	}
	if !fi.Mode().IsRegular() {
		return stale("is not a regular file (a symlink or special file)", nil)
	}
	if v.betweenCheckAndOpen != nil {
		v.betweenCheckAndOpen()
	}
	f, err := dir.OpenFile(name, os.O_RDONLY|verifyOpenFlags, 0)
	if err != nil {
		return stale("was replaced while being opened", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !os.SameFile(fi, st) || !st.Mode().IsRegular() {
		return stale("was replaced while being opened", err)
	}
	max := v.MaxBytes
	if max <= 0 {
		max = DefaultMaxArtifactBytes
	}
	if st.Size() > max {
		return stale("is larger than the verifier reads", nil)
	}
	h := sha256.New()
	buf := make([]byte, 64<<10)
	var n int64
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		k, err := f.Read(buf)
		h.Write(buf[:k])
		n += int64(k)
		if n > max {
			return stale("grew past what the verifier reads", nil)
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return stale("could not be read", err)
		}
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != a.Revision {
		return stale("changed: its revision is no longer the one handed off", nil)
	}
	return nil
}

// artifactPath checks a workspace-relative path and splits it.
func artifactPath(p string) ([]string, error) {
	const field = "request.handoffs"
	switch {
	case p == "" || len(p) > 4096:
		return nil, errorf(CodeOutOfRange, field, "an artifact path holds 1..4096 bytes")
	case !utf8.ValidString(p) || strings.ContainsAny(p, "\x00\\"):
		return nil, errorf(CodeOutOfRange, field, "an artifact path is UTF-8 without NUL or backslash")
	case path.IsAbs(p):
		return nil, errorf(CodeOutOfRange, field, "an artifact path is relative to the workspace, got an absolute path")
	}
	var parts []string
	for _, c := range strings.Split(p, "/") {
		switch c {
		case "", ".":
			continue
		case "..":
			return nil, errorf(CodeOutOfRange, field, "an artifact path may not hold \"..\"")
		}
		parts = append(parts, c)
	}
	if len(parts) == 0 {
		return nil, errorf(CodeOutOfRange, field, "an artifact path names a file, not the workspace")
	}
	return parts, nil
}

func validRevision(r string) bool {
	if len(r) != 64 {
		return false
	}
	for i := 0; i < len(r); i++ {
		if c := r[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func quote(s string) string { return "\"" + shorten(s) + "\"" }
