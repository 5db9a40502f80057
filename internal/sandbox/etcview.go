//go:build linux

package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
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
// one mount where a bind per file costs bubblewrap about 0.15 ms each. It
// returns "" when no view can be made here, and the caller binds each file
// instead: the same files, shown the slow way.
func etcView(cacheDir string) string { return makeView(cacheDir, "/etc") }

// makeView finds or makes the view of host (the host's /etc) under
// cacheDir. A view is named by the stamp of the host's files (device,
// inode, size, modification and change times of each, and of a link's
// target when it is read through), so a host file changed since, by a
// write, a rename or a package upgrade, names another view, and one is
// made for it. A view is written in full into a temporary directory and
// renamed into place, so one that exists under its name is complete; it
// is used only while it is a directory of this user's that nobody else can
// write. Finding one costs a stat per file: a runtime's first sandboxed
// call pays that, not a read of /etc/alternatives's hundreds of links.
func makeView(cacheDir, host string) string {
	if cacheDir == "" {
		return ""
	}
	stamp, ok := hostStamp(host)
	if !ok {
		return ""
	}
	parent := filepath.Join(cacheDir, "pablo", "sandbox-etc")
	dir := filepath.Join(parent, stamp)
	if viewUsable(dir) {
		return dir
	}
	entries, err := readView(host, etcRun)
	if err != nil {
		return ""
	}
	if again, ok := hostStamp(host); !ok || again != stamp {
		return "" // the host's files are changing: bind them this time
	}
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return ""
	}
	for range 2 {
		tmp, err := os.MkdirTemp(parent, ".build-")
		if err != nil {
			return ""
		}
		if err := writeView(tmp, entries); err != nil {
			os.RemoveAll(tmp)
			return ""
		}
		if os.Rename(tmp, dir) == nil {
			return dir
		}
		// Another process made the same view first, or an unusable one
		// is in the way: keep the first, replace the other once.
		os.RemoveAll(tmp)
		if viewUsable(dir) {
			return dir
		}
		if os.RemoveAll(dir) != nil {
			return ""
		}
	}
	return ""
}

// hostStamp is the hex stamp of the host's files etcRun names (32 digits:
// it names a directory).
func hostStamp(host string) (string, bool) {
	h := sha256.New()
	var b []byte
	for _, abs := range etcRun {
		path := filepath.Join(host, strings.TrimPrefix(abs, "/etc/"))
		b = append(b[:0], path...)
		b = append(b, 0)
		for _, stat := range []func(string) (fs.FileInfo, error){os.Lstat, os.Stat} {
			info, err := stat(path)
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					b = append(b, '-')
					continue
				}
				return "", false
			}
			st, ok := info.Sys().(*syscall.Stat_t)
			if !ok {
				return "", false
			}
			for _, v := range [...]int64{int64(st.Dev), int64(st.Ino), int64(st.Mode), st.Size, st.Mtim.Nano(), st.Ctim.Nano()} {
				b = strconv.AppendInt(b, v, 10)
				b = append(b, ',')
			}
			if info.Mode()&fs.ModeSymlink == 0 {
				break // Stat would say the same
			}
		}
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:32], true
}

// readView reads the named entries of root (absolute paths under /etc) as
// a view. A link whose target lies in a system directory every sandbox
// shows stays a link (so /etc/localtime still names its zone); any other
// link is read through, as a bind of it would show it. A directory is read
// one level deep. A missing entry is left out, as --ro-bind-try leaves it.
func readView(root string, names []string) ([]viewEntry, error) {
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
		e, err := readEntry(filepath.Join(root, rel), rel, true)
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
			ke, err := readKid(filepath.Join(root, rel, k.Name()), rel+"/"+k.Name(), k.Type())
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

// readKid reads an entry of a shown directory, of the type its directory
// listing gave: a link's target (one readlink, so /etc/alternatives's
// hundreds of links stay cheap), a file's content; anything else is left
// out.
func readKid(path, rel string, typ fs.FileMode) (viewEntry, error) {
	switch {
	case typ&fs.ModeSymlink != 0:
		target, err := os.Readlink(path)
		return viewEntry{rel: rel, mode: fs.ModeSymlink, target: target}, err
	case typ.IsRegular():
		return readEntry(path, rel, false)
	}
	return viewEntry{}, errSkipEntry
}

// errSkipEntry is an entry of a directory the view leaves out: a further
// directory, a device, a socket.
var errSkipEntry = errors.New("not shown")

// readEntry reads one entry. top says it is one etcRun names (a directory
// is shown; below it only files and links are).
func readEntry(path, rel string, top bool) (viewEntry, error) {
	info, err := os.Lstat(path)
	if err != nil {
		return viewEntry{}, err
	}
	if info.Mode()&fs.ModeSymlink != 0 {
		target, err := os.Readlink(path)
		if err != nil {
			return viewEntry{}, err
		}
		if !top || keptLink(path) {
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

// keptLink reports whether the link at path resolves into a system
// directory every sandbox shows, where it can stay a link.
func keptLink(path string) bool {
	real, err := filepath.EvalSymlinks(path)
	return err == nil && IsSystemPath(real)
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

// viewUsable reports whether dir is a made view: a directory of this
// user's that nobody else can write, as is every directory in it.
func viewUsable(dir string) bool {
	info, err := os.Lstat(dir)
	if err != nil || !info.IsDir() || !ownedAndClosed(info) {
		return false
	}
	for _, abs := range etcRun {
		info, err := os.Lstat(filepath.Join(dir, strings.TrimPrefix(abs, "/etc/")))
		if err == nil && info.IsDir() && !ownedAndClosed(info) {
			return false
		}
	}
	return true
}

// ownedAndClosed reports whether an entry belongs to this process's user
// and nobody else may write it.
func ownedAndClosed(info fs.FileInfo) bool {
	st, ok := info.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid() && info.Mode().Perm()&0o022 == 0
}
