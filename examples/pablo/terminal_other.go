//go:build !linux

package main

import "os"

// isTerminal is false here: the approval prompt needs Linux's terminal
// and /proc, so `pablo run` has no terminal channel on other systems.
func isTerminal(*os.File) bool { return false }
