package engine

import (
	"context"

	"github.com/pabloagent/pablo/internal/proc"
	"github.com/pabloagent/pablo/ledger"
)

// withGroupRecorder records every process group the task's tools and
// catalogs start in the task's ledger before the group is given any work,
// so a crash of the host leaves it findable by recovery. On a store that
// keeps volatile records (both of the ledger's stores do) this is no
// barrier: see [ledger.Root.RecordProcessGroup].
func (s *step) withGroupRecorder(ctx context.Context) context.Context {
	root, agent := s.t.root, s.agent
	return proc.WithRecorder(ctx, func(ctx context.Context, g proc.Group) error {
		return root.RecordProcessGroup(ctx, agent, ledger.ProcessGroupRecord{BootID: g.BootID, Pgid: g.Pgid, LeaderStart: g.LeaderStart, Program: g.Program})
	})
}
