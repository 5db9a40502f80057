//go:build !unix

package children

// verifyOpenFlags add nothing where the flags do not exist: the Lstat
// before the open and the same-file check after it still refuse a link or
// a replaced file.
const verifyOpenFlags = 0
