//go:build !unix

package tracefile

// createFlags add nothing where the flags do not exist: O_EXCL refuses a
// link at the path, and Go opens every file uninheritable there.
const createFlags = 0
