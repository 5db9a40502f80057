//go:build !linux

package ttycanary

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

// Terminal is a pseudo-terminal pair; outside Linux none can be opened.
type Terminal struct{}

// Open fails outside Linux.
func Open() (*Terminal, error) {
	return nil, errors.New("ttycanary: pseudo-terminals are opened on Linux only")
}

// Term returns nil.
func (t *Terminal) Term() *os.File { return nil }

// Attach does nothing.
func (t *Terminal) Attach(*exec.Cmd) {}

// Typed returns false.
func (t *Terminal) Typed() (bool, error) { return false, nil }

// Queued returns 0.
func (t *Terminal) Queued() (int, error) { return 0, nil }

// Screen returns "".
func (t *Terminal) Screen() string { return "" }

// Close does nothing.
func (t *Terminal) Close() error { return nil }

func errnoName(e syscall.Errno) string { return strconv.Itoa(int(e)) }
