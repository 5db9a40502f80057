//go:build unix

package tracefile

import "syscall"

// createFlags add to O_EXCL (which already refuses a link at the path) a
// descriptor that no started process inherits.
const createFlags = syscall.O_NOFOLLOW | syscall.O_CLOEXEC
