package sandbox

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/pabloagent/pablo/internal/proc"
)

// TestGateClosedWithoutReleaseRunsNothing: bubblewrap takes end of file on
// its --block-fd for a release, so the sandbox holds the gate's write end
// itself: when ours closes without the release (its owner died or refused
// the group), the command still does not run, and the sandbox waits until
// it is killed. The command also does not inherit the gate.
func TestGateClosedWithoutReleaseRunsNothing(t *testing.T) {
	t.Parallel()
	l := needBwrap(t)
	ws := t.TempDir()
	marker := filepath.Join(ws, "ran")
	c, err := l.Command(Profile{Filesystem: WorkspaceWrite}, Spec{Path: "/usr/bin/touch", Args: []string{"/usr/bin/touch", marker}, Env: []string{}, Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Started without its gate, which is then closed unreleased.
	p, err := proc.Start(context.Background(), c.Cmd, proc.Options{MaxStderr: 4096})
	c.Started()
	if err != nil {
		t.Fatal(err)
	}
	c.gate.Close()
	c.gate = nil
	begin := time.Now()
	if err := exec.Command("/bin/sh", "-c", ":").Run(); err != nil {
		t.Fatal(err)
	}
	// bubblewrap's setup takes a few milliseconds; give it ample.
	for until := time.Now().Add(10*time.Since(begin) + 300*time.Millisecond); time.Now().Before(until); time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(marker); err == nil {
			t.Fatal("the command ran on end of file at its gate")
		}
		select {
		case <-p.Done():
			res, _ := p.Wait()
			t.Fatalf("the sandbox ended before it was killed: %+v %s", res, res.Stderr)
		default:
		}
	}
	p.Close()

	// Released, it runs, and sees neither end of the gate: the descriptors
	// an unconfined command has (this test may have inherited some).
	want, _, _, _ := run(t, l, Profile{Mode: Off}, ws, `ls /proc/self/fd`)
	out, errOut, code, err := run(t, l, Profile{}, ws, `ls /proc/self/fd`)
	if err != nil || code != 0 || out != want {
		t.Fatalf("descriptors %q, unconfined %q (%d, %v, %s)", out, want, code, err, errOut)
	}
}
