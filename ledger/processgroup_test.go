package ledger

import (
	"context"
	"path/filepath"
	"testing"
)

// TestProcessGroupRecordIsDurableInEveryStore: a recorded process group is in
// the store when RecordProcessGroup returns (volatile in both, see
// TestVolatileRecordSurvivesAKilledWriter), and both keep it for recovery.
func TestProcessGroupRecordIsDurableInEveryStore(t *testing.T) {
	ctx := context.Background()
	bolt, err := OpenBolt(filepath.Join(t.TempDir(), "l.db"), BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer bolt.Close()
	for name, store := range map[string]Store{"memory": NewMemoryStore(), "bolt": bolt} {
		t.Run(name, func(t *testing.T) {
			root, err := NewRoot(ctx, Options{Store: store})
			if err != nil {
				t.Fatal(err)
			}
			g := ProcessGroupRecord{BootID: "b0", Pgid: 4242, LeaderStart: 987, Program: "/bin/sh"}
			if err := root.RecordProcessGroup(ctx, root.RootAgentID(), g); err != nil {
				t.Fatal(err)
			}
			// No further barrier: the record must already be in the store.
			rep, err := RecoverTask(ctx, store, root.ID())
			if err != nil {
				t.Fatal(err)
			}
			g.AgentID = root.RootAgentID()
			if len(rep.ProcessGroups) != 1 || rep.ProcessGroups[0] != g {
				t.Fatalf("groups %+v, want %+v", rep.ProcessGroups, g)
			}
			if err := root.RecordProcessGroup(ctx, root.RootAgentID(), ProcessGroupRecord{Pgid: 1}); err == nil {
				t.Fatal("a group without a boot ID was recorded")
			}
		})
	}
}
