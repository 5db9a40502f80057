package main

import "golang.org/x/sys/unix"

// dropDumpable makes this process non-dumpable. The kernel then refuses
// /proc/PID/environ, mem, maps and ptrace to every process of the same user
// that lacks CAP_SYS_PTRACE, so a shell command or a stdio MCP server started
// with a cleared environment cannot read the host's initial environment (the
// provider key among it) through /proc/$PPID/environ. Children are not
// affected: execve makes an ordinary program dumpable again. Root, and any
// holder of CAP_SYS_PTRACE, can still read it; only a sandbox that hides the
// host's /proc closes that.
func dropDumpable() error {
	return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
}
