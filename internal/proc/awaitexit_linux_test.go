package proc

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// TestAwaitExitWakesOnTheExitAndKnowsAReusedPid: the pidfd wait for a
// namespace init returns as soon as it exits (not on a probe's next tick),
// says gone for a pid that no longer exists or that a process of another
// group holds (neither the leader's nor one it leads), and says not gone
// when the deadline passes first.
func TestAwaitExitWakesOnTheExitAndKnowsAReusedPid(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("/bin/sh", "-c", "exec sleep 60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()

	if gone, ok := awaitExit(pid, pid, time.Now()); !ok || gone {
		t.Fatalf("a live member at a passed deadline: gone %v, ok %v", gone, ok)
	}
	if gone, ok := awaitExit(pid, pid+1, time.Now()); !ok || gone {
		t.Fatalf("an init that leads its own group (a new session): gone %v, ok %v", gone, ok)
	}
	member := exec.Command("/bin/sh", "-c", "exec sleep 60") // in the test's group
	if err := member.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = member.Process.Kill(); _ = member.Wait() }()
	if gone, ok := awaitExit(member.Process.Pid, pid, time.Now().Add(time.Minute)); !ok || !gone {
		t.Fatalf("a pid another group holds: gone %v, ok %v", gone, ok)
	}
	done := make(chan bool)
	go func() {
		gone, ok := awaitExit(pid, pid, time.Now().Add(time.Minute))
		done <- gone && ok
	}()
	_ = cmd.Process.Kill()
	// A minute's deadline: only the exit can end the wait this soon.
	if !<-done {
		t.Fatal("the exit did not end the wait")
	}
	_ = cmd.Wait()
	if gone, ok := awaitExit(pid, pid, time.Now().Add(time.Minute)); !ok || !gone {
		t.Fatalf("a reaped pid: gone %v, ok %v", gone, ok)
	}
}
