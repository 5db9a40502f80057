//go:build !unix

package fstools

import "io/fs"

// keyOf has no device and inode to give here: nothing is reserved.
func keyOf(fs.FileInfo) (fileKey, bool) { return fileKey{}, false }
