package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// isTerminal reports whether f is a terminal: it answers the terminal
// attributes request.
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// isTerminalOutput reports whether f, an output, is a terminal.
func isTerminalOutput(f *os.File) bool { return isTerminal(f) }
