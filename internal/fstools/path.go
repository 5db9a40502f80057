package fstools

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/pabloagent/pablo/authority"
)

// MaxPathBytes is the longest path argument accepted, in bytes.
const MaxPathBytes = 4096

// pathError is what the lexical checker returns; toolErr turns it into the
// tool-specific public error.
type pathError struct {
	invalid  string // non-empty: an argument error with this reason
	encoding bool   // not UTF-8
	denial   string // non-empty: a builtin.workspace denial with this reason
}

// lexicalPath checks a path argument without touching the filesystem and
// returns it workspace-relative ("." for the workspace itself) together with
// its components. dir is the workspace's resolved absolute directory.
//
// Rules: nonempty, at most MaxPathBytes, no NUL, valid UTF-8; ".." components
// are rejected, never normalized; "" and "." components are dropped; an
// absolute path must lie inside dir and is converted to relative.
func lexicalPath(dir, p string) (rel string, parts []string, perr *pathError) {
	switch {
	case p == "":
		return "", nil, &pathError{invalid: "must not be empty; use \".\" for the workspace"}
	case len(p) > MaxPathBytes:
		return "", nil, &pathError{invalid: "must be at most 4096 bytes"}
	case strings.IndexByte(p, 0) >= 0:
		return "", nil, &pathError{invalid: "must not contain NUL"}
	case !utf8.ValidString(p):
		return "", nil, &pathError{encoding: true}
	}
	rest := p
	if strings.HasPrefix(p, "/") {
		switch {
		case p == dir:
			rest = ""
		case dir == "/":
			rest = p[1:]
		case strings.HasPrefix(p, dir) && p[len(dir)] == '/':
			rest = p[len(dir)+1:]
		default:
			return "", nil, &pathError{denial: "absolute path is outside the workspace; use a workspace-relative path"}
		}
	}
	for c := range strings.SplitSeq(rest, "/") {
		switch c {
		case "", ".":
			continue
		case "..":
			return "", nil, &pathError{denial: "\"..\" is not allowed in workspace paths; name the path from the workspace root"}
		}
		parts = append(parts, c)
	}
	if len(parts) == 0 {
		return ".", nil, nil
	}
	return strings.Join(parts, "/"), parts, nil
}

// target is a checked path: its relative form, its parent directory handle
// (owned, to be closed) and the final component's Lstat information.
type target struct {
	rel    string
	parent *os.Root // the directory holding name; for ".", the workspace itself
	name   string   // "." for the workspace
	info   fs.FileInfo
	exists bool
}

func (t *target) close() {
	if t.parent != nil {
		t.parent.Close()
	}
}

// check runs the lexical check and the policy decision for one path argument.
func (c *call) check(p string, kinds ...authority.ResourceKind) (rel string, parts []string, err error) {
	rel, parts, _, err = c.checkDecided(p, kinds...)
	return rel, parts, err
}

// checkDecided is check that also returns the allowed decision over the
// path: the first one, of the kinds in order, that an explicit rule made,
// else the first.
func (c *call) checkDecided(p string, kinds ...authority.ResourceKind) (rel string, parts []string, allowed authority.Decision, err error) {
	rel, parts, perr := lexicalPath(c.t.ws.dir, p)
	if perr != nil {
		switch {
		case perr.invalid != "":
			return "", nil, allowed, &ArgumentError{Tool: c.id, Field: "path", Reason: perr.invalid}
		case perr.encoding:
			return "", nil, allowed, &Error{Tool: c.id, Code: UnsupportedEncoding, Path: strings.ToValidUTF8(p, "\uFFFD"), Detail: "the path is not valid UTF-8"}
		default:
			return "", nil, allowed, &DeniedError{Tool: c.id, Path: p, Decision: builtinDenial(authority.RuleWorkspace, perr.denial)}
		}
	}
	for i, k := range kinds {
		d := c.t.decide(k, rel)
		if !d.Allowed {
			return "", nil, allowed, &DeniedError{Tool: c.id, Path: rel, Decision: d}
		}
		if i == 0 || (allowed.Layer == authority.LayerConfiguration && d.Layer != authority.LayerConfiguration) {
			allowed = d
		}
	}
	return rel, parts, allowed, nil
}

// resolve walks parts from the workspace root without following symlinks and
// returns the parent handle of the final component with its Lstat info. A
// missing final component is reported through target.exists when
// allowMissing is set; a missing directory on the way is not_found.
func (c *call) resolve(rel string, parts []string, allowMissing bool) (*target, error) {
	if len(parts) == 0 {
		r, err := c.t.ws.root.OpenRoot(".")
		if err != nil {
			return nil, c.ioErr(rel, err)
		}
		fi, err := r.Lstat(".")
		if err != nil {
			r.Close()
			return nil, c.ioErr(rel, err)
		}
		return &target{rel: ".", parent: r, name: ".", info: fi, exists: true}, nil
	}
	dir, err := c.openDirs(rel, parts[:len(parts)-1])
	if err != nil {
		return nil, err
	}
	name := parts[len(parts)-1]
	fi, err := dir.Lstat(name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) && allowMissing {
			return &target{rel: rel, parent: dir, name: name}, nil
		}
		dir.Close()
		return nil, c.fsErr(rel, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		dir.Close()
		return nil, c.symlinkDenied(rel)
	}
	if c.t.reserved.Has(fi) {
		dir.Close()
		return nil, c.reservedDenied(rel)
	}
	return &target{rel: rel, parent: dir, name: name, info: fi, exists: true}, nil
}

// openDirs opens the directory named by parts, one component at a time. Each
// component is inspected with Lstat (a symlink is denied) and then opened;
// the opened handle must be the directory inspected, so a swap between the
// two steps is caught instead of followed.
func (c *call) openDirs(rel string, parts []string) (*os.Root, error) {
	cur, err := c.t.ws.root.OpenRoot(".")
	if err != nil {
		return nil, c.ioErr(rel, err)
	}
	for i, name := range parts {
		next, err := c.openSubdir(cur, rel, name)
		cur.Close()
		if err != nil {
			return nil, err
		}
		cur = next
		if c.writing && c.t.repoWrite {
			if err := c.nestedRepo(cur, rel, strings.Join(parts[:i+1], "/")); err != nil {
				cur.Close()
				return nil, err
			}
		}
	}
	return cur, nil
}

// openSubdir opens the directory name inside dir, no-follow and verified.
func (c *call) openSubdir(dir *os.Root, rel, name string) (*os.Root, error) {
	fi, err := dir.Lstat(name)
	if err != nil {
		return nil, c.fsErr(rel, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, c.symlinkDenied(rel)
	}
	if !fi.IsDir() {
		return nil, &Error{Tool: c.id, Code: NotDirectory, Path: rel, Detail: "a component of the path is not a directory"}
	}
	if c.t.hooks.betweenCheckAndOpen != nil {
		c.t.hooks.betweenCheckAndOpen(rel, name)
	}
	next, err := dir.OpenRoot(name)
	if err != nil {
		return nil, c.swapped(dir, rel, name, err)
	}
	st, err := next.Stat(".")
	if err != nil || !os.SameFile(fi, st) {
		next.Close()
		return nil, c.swapped(dir, rel, name, err)
	}
	return next, nil
}

// swapped explains a handle that is not what was inspected: the entry was
// replaced between the check and the use.
func (c *call) swapped(dir *os.Root, rel, name string, cause error) error {
	if fi, err := dir.Lstat(name); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return c.symlinkDenied(rel)
	}
	if cause != nil && errors.Is(cause, fs.ErrNotExist) {
		return &Error{Tool: c.id, Code: NotFound, Path: rel, Detail: "the path was removed while being opened", cause: cause}
	}
	return &Error{Tool: c.id, Code: IOError, Path: rel, Detail: "the path changed while being opened; retry", cause: cause}
}

func (c *call) symlinkDenied(rel string) error {
	return &DeniedError{Tool: c.id, Path: rel, Decision: builtinDenial(authority.RuleSymlink,
		"symbolic links are not followed in workspace paths; name the real path")}
}

// fsErr maps an operating-system error to a recoverable code without its
// message.
func (c *call) fsErr(rel string, err error) error {
	var errno syscall.Errno
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &Error{Tool: c.id, Code: NotFound, Path: rel, Detail: "the path does not exist in the workspace", cause: err}
	case errors.As(err, &errno) && errno == syscall.ENOTDIR:
		return &Error{Tool: c.id, Code: NotDirectory, Path: rel, Detail: "a component of the path is not a directory", cause: err}
	case errors.As(err, &errno) && errno == syscall.ELOOP:
		return c.symlinkDenied(rel)
	}
	return c.ioErr(rel, err)
}

func (c *call) ioErr(rel string, err error) error {
	var errno syscall.Errno
	detail := "the operating system reported an error"
	if errors.As(err, &errno) && (errno == syscall.EACCES || errno == syscall.EPERM) {
		detail = "the operating system refused access"
	} else if errors.Is(err, os.ErrClosed) {
		detail = "the workspace is closed"
	}
	return &Error{Tool: c.id, Code: IOError, Path: rel, Detail: detail, cause: err}
}
