package proc

import (
	"context"
	"io"
	"os/exec"
	"testing"
	"time"
)

// TestLateReadersAreNotAHeldPipe: readers that have not run by the time
// the cleanup allowance runs out (a loaded host schedules them late) are
// waited for when the kernel reports every write end closed: the pipes
// are not held open, the cleanup is proven and no byte is lost. The
// readers are held back by the capture's lock until well past the
// allowance; were they released sooner, the test would prove less, but
// could not fail.
//
// It does not run in parallel: a process another test forks holds a copy
// of every descriptor of this one from its fork to its exec, and one that
// is between the two when the allowance runs out holds the pipes' write
// ends open, which is a held pipe, truly, for that instant.
func TestLateReadersAreNotAHeldPipe(t *testing.T) {
	const allowance = 10 * time.Millisecond
	cmd := exec.Command("/bin/sh", "-c", "read x; printf out; printf err >&2")
	p, err := Start(context.Background(), cmd, Options{PipeStdin: true, CleanupAllowance: allowance, MaxStdout: 64, MaxStderr: 64})
	if err != nil {
		t.Fatal(err)
	}
	p.cap.mu.Lock()
	if _, err := io.WriteString(p.Stdin(), "\n"); err != nil {
		p.cap.mu.Unlock()
		t.Fatal(err)
	}
	for end := time.Now().Add(time.Minute); !exited(p.Pid()); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			p.cap.mu.Unlock()
			t.Fatal("the command never exited")
		}
	}
	select {
	case <-p.Done():
		t.Error("the teardown ended while its readers still had bytes to read")
	case <-time.After(30 * allowance):
	}
	p.cap.mu.Unlock()
	res, err := p.Wait()
	if err != nil || string(res.Stdout) != "out" || string(res.Stderr) != "err" || res.ExitCode != 0 {
		t.Fatalf("got %+v, %v", res, err)
	}
}

// TestExitedTellsAZombieFromALiveChild: exited is what decides, once the
// allowance is out, whether a leader not yet reaped is only late.
func TestExitedTellsAZombieFromALiveChild(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("/bin/sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if exited(pid) {
		t.Error("a running child reads as exited")
	}
	_ = cmd.Process.Kill()
	for end := time.Now().Add(time.Minute); !exited(pid); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("a killed, unreaped child never read as exited")
		}
	}
	_ = cmd.Wait()
	if !exited(pid) {
		t.Error("a reaped child reads as alive")
	}
}
