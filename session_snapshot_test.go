package pablo_test

import (
	"context"
	"testing"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/ledger"
)

// TestSessionPromptRecordsItsSnapshot: every session prompt (what an ACP
// session/prompt runs) is a task start, so each records its own dispatch
// snapshot, whose digest its task object carries; prompts on the same
// runtime have equal snapshots.
func TestSessionPromptRecordsItsSnapshot(t *testing.T) {
	store := ledger.NewMemoryStore()
	s, ws := sessionHandler(t, &echoModel{}, store, nil)
	x, err := s.New(context.Background(), pablo.SessionRequest{Cwd: ws})
	if err != nil {
		t.Fatal(err)
	}
	var digests []string
	for _, p := range []string{"first", "second"} {
		task, err := x.Prompt(context.Background(), p, nil)
		if err != nil {
			t.Fatal(err)
		}
		obj := task.Wait()
		rep, err := ledger.RecoverTask(context.Background(), store, task.ID())
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Snapshots) != 1 || rep.Snapshots[0].Snapshot == nil || string(rep.Snapshots[0].Digest) != obj.SnapshotDigest {
			t.Fatalf("prompt %q: snapshots %+v, task object digest %q", p, rep.Snapshots, obj.SnapshotDigest)
		}
		digests = append(digests, obj.SnapshotDigest)
	}
	if digests[0] != digests[1] {
		t.Fatalf("two prompts on one runtime have different snapshots: %v", digests)
	}
}
