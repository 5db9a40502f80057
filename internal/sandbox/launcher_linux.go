package sandbox

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// platformSupported says whether bubblewrap exists on this platform.
const platformSupported = true

// filterPipe is a pipe that holds the compiled filter and is already
// closed for writing, so bubblewrap reads the program and then end of
// file. The filter is a few hundred bytes, far below a pipe's buffer: the
// write never blocks. The read end is blocking (no poller): only the
// child reads it.
func filterPipe(filter []byte) (*os.File, error) {
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
		return nil, err
	}
	n, err := unix.Write(fds[1], filter)
	unix.Close(fds[1])
	if err == nil && n != len(filter) {
		err = fmt.Errorf("short write of %d of %d bytes", n, len(filter))
	}
	if err != nil {
		unix.Close(fds[0])
		return nil, err
	}
	return os.NewFile(uintptr(fds[0]), "seccomp-filter"), nil
}

// openBeneath opens rel, a slash-separated path of a directory beneath
// dir, and each directory on the way, as path descriptors (the first
// component's first, rel's last), one component at a time and following
// no symbolic link: what it opens is a directory of dir's tree whatever
// the tree's links say, so binding it shows nothing of the host beyond.
func openBeneath(dir, rel string) ([]*os.File, error) {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	var out []*os.File
	fail := func(err error) ([]*os.File, error) {
		for _, f := range out {
			f.Close()
		}
		return nil, err
	}
	parts := strings.Split(rel, "/")
	for i, c := range parts {
		if c == "" || c == "." || c == ".." {
			unix.Close(fd)
			return fail(os.ErrInvalid)
		}
		next, err := unix.Openat(fd, c, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if i == 0 {
			unix.Close(fd)
		}
		if err != nil {
			return fail(err)
		}
		fd = next
		out = append(out, os.NewFile(uintptr(fd), filepath.Join(dir, filepath.FromSlash(strings.Join(parts[:i+1], "/")))))
	}
	return out, nil
}

// openFileBeneath is openBeneath for rel, a file beneath dir: the
// directories on the way, then the file itself, opened without following
// a link (a link or anything but a regular file there is an error).
func openFileBeneath(dir, rel string) ([]*os.File, error) {
	parent, name := path.Split(rel)
	var chain []*os.File
	at := dir
	if parent = strings.TrimSuffix(parent, "/"); parent != "" {
		var err error
		if chain, err = openBeneath(dir, parent); err != nil {
			return nil, err
		}
		at = chain[len(chain)-1].Name()
	}
	fail := func(err error) ([]*os.File, error) {
		for _, f := range chain {
			f.Close()
		}
		return nil, err
	}
	if name == "" || name == "." || name == ".." {
		return fail(os.ErrInvalid)
	}
	dfd := -1
	if len(chain) > 0 {
		dfd = int(chain[len(chain)-1].Fd())
	} else {
		var err error
		if dfd, err = unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
			return fail(err)
		}
		defer unix.Close(dfd)
	}
	fd, err := unix.Openat(dfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fail(err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return fail(os.ErrInvalid)
	}
	return append(chain, os.NewFile(uintptr(fd), filepath.Join(at, name))), nil
}
