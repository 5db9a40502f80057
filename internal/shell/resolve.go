package shell

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// The directories a bare program name is looked up in, in order.
const (
	searchFirst  = "/usr/bin"
	searchSecond = "/bin"
)

// ErrResolve is the kind of every *ResolveError.
var ErrResolve = errors.New("shell: program could not be resolved")

// ResolveReason is a stable code for why a program did not resolve.
type ResolveReason string

// The reasons Resolve fails.
const (
	ResolveEmpty         ResolveReason = "empty_program"
	ResolveRelativePath  ResolveReason = "relative_path"
	ResolveNotFound      ResolveReason = "not_found"
	ResolveNotRegular    ResolveReason = "not_regular"
	ResolveNotExecutable ResolveReason = "not_executable"
)

// ResolveError reports a program that is not a runnable executable under
// the resolution rules. It never repeats the program name.
type ResolveError struct {
	Reason ResolveReason
}

// Error implements error.
func (e *ResolveError) Error() string {
	var hint string
	switch e.Reason {
	case ResolveEmpty:
		hint = "the program word is empty"
	case ResolveRelativePath:
		hint = "a program path must be absolute; bare names are searched in /usr/bin then /bin"
	case ResolveNotFound:
		hint = "no such program in /usr/bin or /bin, or at the absolute path given"
	case ResolveNotRegular:
		hint = "the program must resolve to a regular file"
	case ResolveNotExecutable:
		hint = "the program file has no execute permission"
	}
	return fmt.Sprintf("shell: program not resolved: %s: %s", e.Reason, hint)
}

// Unwrap makes errors.Is(err, ErrResolve) hold.
func (e *ResolveError) Unwrap() error { return ErrResolve }

// Executable is a resolved program.
type Executable struct {
	// Path is the path that is executed: the absolute path given, or the
	// /usr/bin or /bin entry a bare name was found at. It is kept (rather
	// than the canonical path) so multi-call binaries still see their name.
	Path string `json:"path"`
	// Canonical is Path with every symlink resolved.
	Canonical string `json:"canonical"`

	info fs.FileInfo // identity (device and inode) of the canonical file
}

// SameFile reports whether two resolved executables are the same file, by
// device and inode: /bin/printf and /usr/bin/printf match on a usrmerge
// system, and so do hard links.
func (e Executable) SameFile(o Executable) bool {
	return e.info != nil && o.info != nil && os.SameFile(e.info, o.info)
}

// Resolve finds the executable a program word names. A bare name is searched
// only in /usr/bin then /bin; a name containing a slash must be an absolute
// path. Symlinks are resolved, and the result must be a regular file with an
// execute bit.
func Resolve(program string) (Executable, error) {
	if program == "" {
		return Executable{}, &ResolveError{Reason: ResolveEmpty}
	}
	if strings.ContainsRune(program, '/') {
		if !strings.HasPrefix(program, "/") {
			return Executable{}, &ResolveError{Reason: ResolveRelativePath}
		}
		return resolveFile(filepath.Clean(program))
	}
	var first error
	for _, dir := range []string{searchFirst, searchSecond} {
		exe, err := resolveFile(dir + "/" + program)
		if err == nil {
			return exe, nil
		}
		var re *ResolveError
		if first == nil && errors.As(err, &re) && re.Reason != ResolveNotFound {
			first = err
		}
	}
	if first != nil {
		return Executable{}, first
	}
	return Executable{}, &ResolveError{Reason: ResolveNotFound}
}

func resolveFile(path string) (Executable, error) {
	canonical, err := filepath.EvalSymlinks(path)
	if err != nil {
		return Executable{}, &ResolveError{Reason: ResolveNotFound}
	}
	info, err := os.Stat(canonical)
	if err != nil {
		return Executable{}, &ResolveError{Reason: ResolveNotFound}
	}
	if !info.Mode().IsRegular() {
		return Executable{}, &ResolveError{Reason: ResolveNotRegular}
	}
	if info.Mode().Perm()&0o111 == 0 {
		return Executable{}, &ResolveError{Reason: ResolveNotExecutable}
	}
	return Executable{Path: path, Canonical: canonical, info: info}, nil
}
