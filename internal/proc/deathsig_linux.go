package proc

import (
	"os/exec"
	"runtime"
	"syscall"
)

// startOwned starts cmd with SIGKILL as its parent-death signal, so the
// direct child dies with the host even when the host is killed outright.
// Linux delivers that signal when the thread that forked exits, not the
// process: the start runs on a locked OS thread, which no other goroutine can
// hold or end meanwhile. Once unlocked the thread returns to the runtime's
// pool, which never ends a thread that no goroutine has locked; this package
// and Pablo never lock one without unlocking it (a host that does, and lets
// the goroutine exit locked, would end that thread).
func startOwned(cmd *exec.Cmd) error {
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return cmd.Start()
}
