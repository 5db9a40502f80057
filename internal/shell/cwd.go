package shell

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// resolveCwd turns the request's cwd into an absolute directory inside the
// canonical workspace ws and its canonical workspace-relative form (with
// "/" separators, "." for the workspace itself). A path that leaves the
// workspace lexically is a workspace denial; one that leaves it through a
// symlink is a symlink denial; a missing or non-directory cwd is an
// argument error.
func resolveCwd(ws, cwd string) (abs, rel string, err error) {
	if strings.IndexByte(cwd, 0) >= 0 {
		return "", "", &ArgumentError{Field: "cwd", Problem: "must not contain NUL"}
	}
	p := filepath.Clean(cwd)
	if filepath.IsAbs(p) {
		if !within(ws, p) {
			return "", "", denial(ruleWorkspace, reasonWorkspace)
		}
	} else {
		if p == ".." || strings.HasPrefix(p, ".."+string(filepath.Separator)) {
			return "", "", denial(ruleWorkspace, reasonWorkspace)
		}
		p = filepath.Join(ws, p)
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", "", &ArgumentError{Field: "cwd", Problem: "no such directory in the workspace"}
		}
		return "", "", &ArgumentError{Field: "cwd", Problem: "cannot be resolved"}
	}
	if !within(ws, real) {
		return "", "", denial(ruleSymlink, reasonSymlink)
	}
	info, err := os.Stat(real)
	if err != nil || !info.IsDir() {
		return "", "", &ArgumentError{Field: "cwd", Problem: "must name a directory"}
	}
	rel, err = filepath.Rel(ws, real)
	if err != nil {
		return "", "", denial(ruleWorkspace, reasonWorkspace)
	}
	return real, filepath.ToSlash(rel), nil
}

// within reports whether p is dir or below it; both are clean and absolute.
func within(dir, p string) bool {
	if p == dir {
		return true
	}
	if dir == string(filepath.Separator) {
		return true
	}
	return strings.HasPrefix(p, dir+string(filepath.Separator))
}

func denial(rule, reason string) *DeniedError {
	return &DeniedError{Decision: Decision{Layer: builtinLayer, RuleID: rule, Reason: reason}}
}
