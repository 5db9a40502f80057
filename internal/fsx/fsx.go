// Package fsx reads the files a host names by path (a deployment, its
// imports, an output schema, a script, a credential file, a ledger store)
// so that no file can hang the host. A FIFO blocks open(2) until a writer
// comes, and a model with a shell can plant one in the workspace; a device
// can stream without end. So every such file is opened with O_NONBLOCK,
// which makes open return at once whatever the file is, then checked with
// fstat to be a regular file before a byte is read, and read in bounded
// chunks that observe the caller's context between them.
package fsx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// Errors a read reports, usable with errors.Is. Open failures (a missing
// file, a permission) keep their os error, so errors.Is(err, fs.ErrNotExist)
// still works.
var (
	// ErrNotRegular: the path names a FIFO, a device, a socket or a
	// directory.
	ErrNotRegular = errors.New("not a regular file")
	// ErrTooLarge: the file holds more than the caller's bound.
	ErrTooLarge = errors.New("file exceeds its size bound")
	// ErrChanged: the file changed while it was being read.
	ErrChanged = errors.New("the file changed while it was being read")
)

// chunk is how much one read step takes before the context is checked
// again.
const chunk = 64 << 10

// OpenFlags are the flags every open of a host-named file adds: O_NONBLOCK
// so a FIFO or a device never blocks the open, O_NOCTTY so a terminal is
// never made the controlling one, O_CLOEXEC so no child inherits it.
const OpenFlags = syscall.O_NONBLOCK | syscall.O_NOCTTY | syscall.O_CLOEXEC

// Open opens path read-only without blocking and returns it only if it is a
// regular file (symlinks are followed; the check is on the opened file, so
// a swap after it cannot matter).
func Open(path string) (*os.File, fs.FileInfo, error) {
	return OpenFile(path, os.O_RDONLY, 0)
}

// OpenFile is os.OpenFile with OpenFlags added, refusing anything but a
// regular file with ErrNotRegular. It serves callers that must write too
// (a store) and their own creation modes.
func OpenFile(path string, flag int, perm os.FileMode) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(path, flag|OpenFlags, perm)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, nil, fmt.Errorf("%s: %w (%s)", path, ErrNotRegular, kind(st.Mode()))
	}
	return f, st, nil
}

// ReadFile reads the whole regular file path, at most max bytes, checking
// ctx before every chunk. It fails with ErrNotRegular, ErrTooLarge,
// ErrChanged (the size or time moved during the read), ctx's error, or the
// open error.
func ReadFile(ctx context.Context, path string, max int64) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, st, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st.Size() > max {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, max)
	}
	buf := make([]byte, 0, min(st.Size(), max)+1)
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if int64(len(buf)) > max {
			return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, max)
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := f.Read(buf[len(buf):min(cap(buf), len(buf)+chunk)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if int64(len(buf)) > max {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, max)
	}
	st2, err := f.Stat()
	if err != nil || st2.Size() != st.Size() || !st2.ModTime().Equal(st.ModTime()) || int64(len(buf)) != st2.Size() {
		return nil, ErrChanged
	}
	return buf, nil
}

func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m.IsDir():
		return "a directory"
	}
	return "not a plain file"
}
