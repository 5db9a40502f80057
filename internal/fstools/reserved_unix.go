//go:build unix

package fstools

import (
	"io/fs"
	"syscall"
)

// keyOf is the device and inode of the file fi describes.
func keyOf(fi fs.FileInfo) (fileKey, bool) {
	if fi == nil {
		return fileKey{}, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileKey{}, false
	}
	return fileKey{uint64(st.Dev), uint64(st.Ino)}, true //nolint:unconvert // Dev's type varies by platform
}
