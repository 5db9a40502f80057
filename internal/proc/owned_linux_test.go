package proc_test

import (
	"context"
	"errors"
	"os/exec"
	"testing"
	"time"

	"github.com/pabloagent/pablo/internal/proc"
)

// TestReapKillsOnlyTheRecordedGroup: a group is reaped only when its boot ID,
// pgid and leader start time are the recorded ones; a forged record that
// differs in any of them matches nothing.
func TestReapKillsOnlyTheRecordedGroup(t *testing.T) {
	t.Parallel()
	var got proc.Group
	ctx := proc.WithRecorder(context.Background(), func(_ context.Context, g proc.Group) error { got = g; return nil })
	p, err := proc.Start(ctx, exec.Command("/bin/sh", "-c", "sleep 60 & wait"), proc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if got.Pgid != p.Pgid() || got.BootID == "" || got.LeaderStart == 0 || got.Program != "/bin/sh" {
		t.Fatalf("recorded %+v for pgid %d", got, p.Pgid())
	}
	forged := []proc.Group{got, got, got}
	forged[0].BootID = "00000000-0000-0000-0000-000000000000"
	forged[1].LeaderStart++
	forged[2].Pgid++ // another group, or none
	for _, g := range forged {
		if m, err := proc.Survivors(g); err != nil || len(m) > 0 {
			t.Fatalf("forged %+v matched %+v (%v)", g, m, err)
		}
	}
	killed, err := proc.Reap(forged[1])
	if err != nil || len(killed) > 0 {
		t.Fatalf("a forged record reaped %+v (%v)", killed, err)
	}
	select {
	case <-p.Done():
		t.Fatal("the group ended after a forged reap")
	default:
	}
	killed, err = proc.Reap(got)
	if err != nil || len(killed) < 1 {
		t.Fatalf("reap: %+v (%v)", killed, err)
	}
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the reaped group did not end")
	}
}

// TestGroupThatCannotBeRecordedIsNotKept: a recorder's error fails the start
// and the group is killed.
func TestGroupThatCannotBeRecordedIsNotKept(t *testing.T) {
	t.Parallel()
	refused := errors.New("store down")
	var pgid int
	ctx := proc.WithRecorder(context.Background(), func(_ context.Context, g proc.Group) error { pgid = g.Pgid; return refused })
	_, err := proc.Start(ctx, exec.Command("/bin/sleep", "60"), proc.Options{})
	if !errors.Is(err, refused) || !errors.Is(err, proc.ErrStart) {
		t.Fatalf("start: %v", err)
	}
	if m, _ := proc.GroupMembers(pgid); len(m) > 0 {
		for _, x := range m {
			if x.Alive() {
				t.Fatalf("the unrecorded group lives on: %+v", m)
			}
		}
	}
}
