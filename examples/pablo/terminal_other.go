//go:build !linux

package main

import "os"

// isTerminal is false here: the approval prompt needs Linux's terminal
// and /proc, so `pablo run` has no terminal channel on other systems.
func isTerminal(*os.File) bool { return false }

// isTerminalOutput reports whether f, an output, is a character device,
// as a terminal is: what `pablo run` writes there is escaped.
func isTerminalOutput(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
