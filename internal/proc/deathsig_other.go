//go:build unix && !linux

package proc

import "os/exec"

// startOwned starts cmd. Only Linux has a parent-death signal; elsewhere a
// group survives its host until recovery reaps it.
func startOwned(cmd *exec.Cmd) error { return cmd.Start() }
