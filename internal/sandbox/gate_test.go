package sandbox

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pabloagent/pablo/internal/proc"
)

// TestGateHelperProcess is the host of TestHostKilledBeforeTheRecordLeavesNothing:
// it starts a command under a recorder that prints the group and never
// returns, and waits to be killed.
func TestGateHelperProcess(t *testing.T) {
	mode, marker := os.Getenv("PABLO_TEST_GATE_MODE"), os.Getenv("PABLO_TEST_GATE_MARKER")
	if mode == "" {
		t.Skip("the helper of TestHostKilledBeforeTheRecordLeavesNothing")
	}
	ws := filepath.Dir(marker)
	c, err := NewLauncher("").Command(Profile{Mode: Mode(mode), Filesystem: WorkspaceWrite},
		Spec{Path: "/bin/sh", Args: []string{"/bin/sh", "-c", "touch " + marker + "; exec sleep 3600"}, Env: []string{"PATH=/usr/bin:/bin"}, Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	ctx := proc.WithRecorder(context.Background(), func(_ context.Context, g proc.Group) error {
		fmt.Printf("pgid %d\n", g.Pgid)
		select {} // the host dies here, before the record is durable
	})
	c.Start(ctx, proc.Options{})
}

// TestHostKilledBeforeTheRecordLeavesNothing: a host killed with SIGKILL
// while it records a group, sandboxed or not, leaves no live process of
// the group, and the command never ran: the gate's pipe reached end of
// file and the leader died with its host. (bubblewrap's own --block-fd
// would not hold here: its namespace init reads it before it sets its
// parent-death signal.)
func TestHostKilledBeforeTheRecordLeavesNothing(t *testing.T) {
	t.Parallel()
	needBwrap(t)
	for _, mode := range []Mode{Required, Off} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			marker := filepath.Join(t.TempDir(), "ran")
			host := exec.Command(os.Args[0], "-test.run=^TestGateHelperProcess$", "-test.count=1")
			host.Env = append(os.Environ(), "PABLO_TEST_GATE_MODE="+string(mode), "PABLO_TEST_GATE_MARKER="+marker)
			out, err := host.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := host.Start(); err != nil {
				t.Fatal(err)
			}
			line, err := bufio.NewReader(out).ReadString('\n')
			pgid, perr := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "pgid ")))
			host.Process.Kill() // the host alone, while it records
			host.Wait()
			if err != nil || perr != nil {
				t.Fatalf("helper said %q: %v %v", line, err, perr)
			}
			var alive []proc.Member
			for end := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				members, err := proc.GroupMembers(pgid)
				if err != nil {
					t.Fatal(err)
				}
				alive = alive[:0]
				for _, m := range members {
					if m.Alive() {
						alive = append(alive, m)
					}
				}
				if len(alive) == 0 || time.Now().After(end) {
					break
				}
			}
			if len(alive) > 0 {
				t.Errorf("the group of a host killed while recording lives on: %+v", alive)
				if pgid > 1 && pgid != syscall.Getpgrp() { // the helper's group, never ours
					syscall.Kill(-pgid, syscall.SIGKILL)
				}
			}
			if _, err := os.Stat(marker); err == nil {
				t.Error("the command ran although its group was never recorded")
			}
		})
	}
}
