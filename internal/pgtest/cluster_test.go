package pgtest

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestServerDiesWithItsTestProcess: a test binary killed outright (kill
// -9, as a CI timeout does) leaves no PostgreSQL server behind: the
// postmaster is its child with SIGKILL as its parent-death signal.
func TestServerDiesWithItsTestProcess(t *testing.T) {
	if os.Getenv("PABLO_PGTEST_CHILD") == "1" {
		c, err := Start(context.Background())
		if err != nil {
			os.Stdout.WriteString("error " + err.Error() + "\n")
			os.Exit(0)
		}
		os.Stdout.WriteString("postmaster " + strconv.Itoa(c.PID()) + " " + c.Dir + "\n")
		time.Sleep(time.Hour) // killed by the parent
	}
	if testing.Short() {
		t.Skip("starts a PostgreSQL cluster")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestServerDiesWithItsTestProcess$")
	cmd.Env = append(os.Environ(), "PABLO_PGTEST_CHILD=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	f := strings.Fields(line)
	if err != nil || len(f) < 2 {
		t.Fatalf("the child said %q, %v", line, err)
	}
	if f[0] == "error" {
		if strings.Contains(line, ErrUnavailable.Error()) {
			t.Skipf("PostgreSQL is not available here: %s", line)
		}
		t.Fatal(line)
	}
	pid, _ := strconv.Atoi(f[1])
	if !Alive(pid) {
		t.Fatalf("postmaster %d is not running", pid)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for Alive(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			t.Fatalf("postmaster %d outlived its test process", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(f) > 2 {
		os.RemoveAll(f[2])
	}
}
