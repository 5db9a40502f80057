//go:build linux

package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// The bounds of an /etc view: what etcRun names is a few hundred KiB on a
// Debian host. A host whose files are over them gets one mount per file.
const (
	maxViewEntries = 4096
	maxViewBytes   = 16 << 20
)

// errViewTooLarge is a host whose /etc files are over the view's bounds.
var errViewTooLarge = errors.New("the /etc files are over the view's bounds")

// viewEntry is one entry of an /etc view: a regular file with its content,
// a directory, or a symbolic link with its target, at a path relative to
// /etc.
type viewEntry struct {
	rel    string
	mode   fs.FileMode // fs.ModeDir, fs.ModeSymlink or 0 (a regular file)
	target string      // a link's target
	data   []byte      // a file's content
}

// etcView is the part of /etc every sandbox with network deny shows, copied
// once into a directory of its own that one read-only bind shows at /etc:
// one mount where a bind per file costs bubblewrap about 0.15 ms each. The
// directory lives under the user's cache directory, named by the digest of
// what it holds; a directory found there is used only when it is ours,
// writable by nobody else and holds exactly what the host's files hold
// now, so a stale or tampered view is never shown. It returns "" when no
// view can be made here, and the caller binds each file instead: the same
// files, shown the slow way.
func etcView(cacheDir string) string {
	if cacheDir == "" {
		return ""
	}
	entries, err := readView("/etc", etcRun, false)
	if err != nil {
		return ""
	}
	sum := viewDigest(entries)
	parent := filepath.Join(cacheDir, "pablo", "sandbox-etc")
	dir := filepath.Join(parent, sum[:32])
	if viewMatches(dir, sum) {
		return dir
	}
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return ""
	}
	tmp, err := os.MkdirTemp(parent, ".build-")
	if err != nil {
		return ""
	}
	if err := writeView(tmp, entries); err != nil {
		os.RemoveAll(tmp)
		return ""
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Another process built the same view first, or a stale one is
		// in the way: keep a matching one, replace anything else.
		os.RemoveAll(tmp)
		if viewMatches(dir, sum) {
			return dir
		}
		if os.RemoveAll(dir) != nil {
			return ""
		}
		return etcViewRetry(parent, dir, sum, entries)
	}
	return dir
}

// etcViewRetry builds the view once more after a stale one was removed.
func etcViewRetry(parent, dir, sum string, entries []viewEntry) string {
	tmp, err := os.MkdirTemp(parent, ".build-")
	if err != nil {
		return ""
	}
	if err := writeView(tmp, entries); err != nil || os.Rename(tmp, dir) != nil {
		os.RemoveAll(tmp)
		if viewMatches(dir, sum) {
			return dir
		}
		return ""
	}
	return dir
}

// readView reads the named entries of root (absolute paths under /etc) as
// a view. A link whose target lies in a system directory every sandbox
// shows stays a link (so /etc/localtime still names its zone); any other
// link is read through, as a bind of it would show it. A directory is read
// one level deep. A missing entry is left out, as --ro-bind-try leaves it.
// built reads a view already written, whose links are all kept ones.
func readView(root string, names []string, built bool) ([]viewEntry, error) {
	var out []viewEntry
	size := 0
	add := func(e viewEntry) error {
		size += len(e.data) + len(e.rel) + len(e.target)
		out = append(out, e)
		if len(out) > maxViewEntries || size > maxViewBytes {
			return errViewTooLarge
		}
		return nil
	}
	for _, abs := range names {
		rel := strings.TrimPrefix(abs, "/etc/")
		e, err := readEntry(filepath.Join(root, rel), rel, true, built)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if err := add(e); err != nil {
			return nil, err
		}
		if e.mode != fs.ModeDir {
			continue
		}
		kids, err := os.ReadDir(filepath.Join(root, rel))
		if err != nil {
			return nil, err
		}
		for _, k := range kids {
			ke, err := readEntry(filepath.Join(root, rel, k.Name()), rel+"/"+k.Name(), false, built)
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, errSkipEntry) {
				continue
			}
			if err != nil {
				return nil, err
			}
			if err := add(ke); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// errSkipEntry is an entry of a directory the view leaves out: a further
// directory, a device, a socket.
var errSkipEntry = errors.New("not shown")

// readEntry reads one entry. top says it is one etcRun names (a directory
// is shown; below it only files and links are); built, that it is an entry
// of a view already written.
func readEntry(path, rel string, top, built bool) (viewEntry, error) {
	info, err := os.Lstat(path)
	if err != nil {
		return viewEntry{}, err
	}
	if info.Mode()&fs.ModeSymlink != 0 {
		target, err := os.Readlink(path)
		if err != nil {
			return viewEntry{}, err
		}
		if real, err := filepath.EvalSymlinks(path); built || !top || err == nil && IsSystemPath(real) {
			return viewEntry{rel: rel, mode: fs.ModeSymlink, target: target}, nil
		}
		if info, err = os.Stat(path); err != nil {
			return viewEntry{}, err
		}
	}
	switch {
	case info.IsDir() && top:
		return viewEntry{rel: rel, mode: fs.ModeDir}, nil
	case info.Mode().IsRegular():
		if info.Size() > maxViewBytes {
			return viewEntry{}, errViewTooLarge
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return viewEntry{}, err
		}
		return viewEntry{rel: rel, data: data}, nil
	}
	return viewEntry{}, errSkipEntry
}

// viewDigest is the hex SHA-256 of a view's entries, in order.
func viewDigest(entries []viewEntry) string {
	h := sha256.New()
	for _, e := range entries {
		fmt.Fprintf(h, "%d:%s\x00%d\x00%d:%s\x00%d:", len(e.rel), e.rel, e.mode, len(e.target), e.target, len(e.data))
		h.Write(e.data)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// writeView writes entries under dir: files 0644, directories 0755, so the
// sandbox's unprivileged user reads them.
func writeView(dir string, entries []viewEntry) error {
	for _, e := range entries {
		p := filepath.Join(dir, e.rel)
		var err error
		switch e.mode {
		case fs.ModeDir:
			err = os.Mkdir(p, 0o755)
		case fs.ModeSymlink:
			err = os.Symlink(e.target, p)
		default:
			err = os.WriteFile(p, e.data, 0o644)
			if err == nil {
				err = os.Chmod(p, 0o644) // past the umask
			}
		}
		if err != nil {
			return err
		}
	}
	return os.Chmod(dir, 0o755)
}

// viewMatches reports whether dir is a view this user owns, that nobody
// else can write, and that holds exactly the entries whose digest is sum.
func viewMatches(dir, sum string) bool {
	info, err := os.Lstat(dir)
	if err != nil || !info.IsDir() || !ownedAndClosed(info) {
		return false
	}
	walked := 0
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Mode()&fs.ModeSymlink == 0 && !ownedAndClosed(info) {
			return fs.ErrPermission
		}
		walked++
		return nil
	})
	if err != nil {
		return false
	}
	entries, err := readView(dir, etcRun, true)
	// Nothing more than the entries read (the walk counts dir itself).
	return err == nil && walked == len(entries)+1 && viewDigest(entries) == sum
}

// ownedAndClosed reports whether an entry belongs to this process's user
// and nobody else may write it.
func ownedAndClosed(info fs.FileInfo) bool {
	st, ok := info.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid() && info.Mode().Perm()&0o022 == 0
}
