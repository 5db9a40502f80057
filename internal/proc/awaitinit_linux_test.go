package proc

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// TestAwaitInitWakesOnTheExitAndKnowsAReusedPid: the pidfd wait for a
// namespace init that leads a session of its own (bubblewrap's
// --new-session, out of the group kill's reach) returns as soon as the
// init exits (a minute's deadline: only the exit can end it this soon) and
// signals nothing; a PID that a process of another group holds (neither
// the leader's group nor one it leads) is gone already, and that process
// is left alone; a reaped PID is gone; a deadline that passes first says
// not gone.
func TestAwaitInitWakesOnTheExitAndKnowsAReusedPid(t *testing.T) {
	t.Parallel()
	start := func(attr *syscall.SysProcAttr) *exec.Cmd {
		cmd := exec.Command("/bin/sh", "-c", "exec sleep 60")
		cmd.SysProcAttr = attr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	leader := 1 // a group the processes below are not in

	init := start(&syscall.SysProcAttr{Setsid: true})
	pid := init.Process.Pid
	if gone, ok := awaitInit(pid, leader, time.Now()); !ok || gone {
		t.Fatalf("a passed deadline: gone %v, ok %v", gone, ok)
	}
	if err := init.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the wait signalled the init: %v", err)
	}
	done := make(chan bool)
	go func() {
		gone, ok := awaitInit(pid, leader, time.Now().Add(time.Minute))
		done <- gone && ok
	}()
	_ = init.Process.Kill()
	if !<-done {
		t.Fatal("the exit did not end the wait")
	}
	_ = init.Wait()
	if gone, ok := awaitInit(pid, leader, time.Now().Add(time.Minute)); !ok || !gone {
		t.Fatalf("a reaped pid: gone %v, ok %v", gone, ok)
	}

	other := start(nil) // in the test's group
	if gone, ok := awaitInit(other.Process.Pid, leader, time.Now().Add(time.Minute)); !ok || !gone {
		t.Fatalf("a pid another group holds: gone %v, ok %v", gone, ok)
	}
	if err := other.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the process that holds the pid was signalled: %v", err)
	}
}
