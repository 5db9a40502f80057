//go:build unix

package children

import "syscall"

// verifyOpenFlags open an artifact without following a link, blocking on
// a FIFO or taking a terminal.
const verifyOpenFlags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK | syscall.O_NOCTTY
