//go:build !linux

package main

// dropDumpable has no equivalent of Linux's PR_SET_DUMPABLE here.
func dropDumpable() error { return nil }
