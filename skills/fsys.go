package skills

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// This file holds the no-follow file access every other file uses.
//
// os.Root keeps each open inside its directory, but it resolves symlinks that
// stay inside. Skills must reject symlinks outright, so each step here first
// Lstats the name (refusing symlinks and the wrong file type), then opens it
// through the os.Root, then compares the opened handle with the Lstat result
// (os.SameFile). A name swapped for a symlink or another file between the two
// steps therefore fails instead of being followed. Files are opened with
// O_NONBLOCK so a FIFO swapped in at the last moment cannot block the open.

// problem classifies a failed no-follow step.
type problem int

const (
	probNone problem = iota
	probMissing
	probSymlink
	probWrongType
	probChanged
	probIO
)

// statNoFollow classifies name inside parent without following it.
func statNoFollow(parent *os.Root, name string, wantDir bool) (fs.FileInfo, problem, error) {
	fi, err := parent.Lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, probMissing, err
	case err != nil:
		return nil, probIO, err
	case fi.Mode()&fs.ModeSymlink != 0:
		return fi, probSymlink, nil
	case wantDir && !fi.IsDir(), !wantDir && !fi.Mode().IsRegular():
		return fi, probWrongType, nil
	}
	return fi, probNone, nil
}

// openDirNoFollow opens the directory name inside parent. When want is not
// nil the directory must be that same directory (device and inode).
func openDirNoFollow(parent *os.Root, name string, want fs.FileInfo) (*os.Root, fs.FileInfo, problem, error) {
	fi, prob, err := statNoFollow(parent, name, true)
	if prob != probNone {
		return nil, fi, prob, err
	}
	if want != nil && !os.SameFile(want, fi) {
		return nil, fi, probChanged, nil
	}
	r, err := parent.OpenRoot(name)
	return sameDir(r, fi, err)
}

// openAbsDirNoFollow opens an absolute directory path whose last element
// must not be a symlink. Earlier elements were resolved by the caller.
func openAbsDirNoFollow(path string, want fs.FileInfo) (*os.Root, fs.FileInfo, problem, error) {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil, probMissing, err
	case err != nil:
		return nil, nil, probIO, err
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, fi, probSymlink, nil
	case !fi.IsDir():
		return nil, fi, probWrongType, nil
	case want != nil && !os.SameFile(want, fi):
		return nil, fi, probChanged, nil
	}
	r, err := os.OpenRoot(path)
	return sameDir(r, fi, err)
}

// sameDir checks that r, just opened (or failed with err), is the directory
// fi was read from: a swap between the check and the open is probChanged.
func sameDir(r *os.Root, fi fs.FileInfo, err error) (*os.Root, fs.FileInfo, problem, error) {
	if err != nil {
		return nil, fi, probIO, err
	}
	st, err := r.Stat(".")
	if err != nil {
		r.Close()
		return nil, fi, probIO, err
	}
	if !os.SameFile(fi, st) {
		r.Close()
		return nil, fi, probChanged, nil
	}
	return r, fi, probNone, nil
}

// openFileNoFollow opens the regular file name inside parent for reading.
func openFileNoFollow(parent *os.Root, name string) (*os.File, fs.FileInfo, problem, error) {
	fi, prob, err := statNoFollow(parent, name, false)
	if prob != probNone {
		return nil, fi, prob, err
	}
	f, err := parent.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fi, probIO, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fi, probIO, err
	}
	if !os.SameFile(fi, st) || !st.Mode().IsRegular() {
		f.Close()
		return nil, fi, probChanged, nil
	}
	return f, st, probNone, nil
}
