package pablo

import (
	"context"
	"errors"

	"github.com/pabloagent/pablo/internal/proc"
	"github.com/pabloagent/pablo/ledger"
)

// SurvivingGroup is a process group a task started, recorded in its ledger,
// that still has live members on this host: its host died before it could
// tear the group down.
type SurvivingGroup struct {
	TaskID string `json:"task_id"`
	ledger.ProcessGroupRecord
	// Pids are the live members found (and, when reaped, killed).
	Pids []int `json:"pids"`
}

// ProcessGroupSurvivors reads every process group recorded in store and
// returns those with live members whose identity still matches on this host:
// the same boot ID, the same pgid, and a leader started at the recorded time
// (or, the leader gone, members no older than it). With reap each one is
// killed (SIGKILL to the group); a group whose boot ID, pgid or start time
// differs is never touched. Outside Linux there is nothing to match and the
// list is empty.
func ProcessGroupSurvivors(ctx context.Context, store ledger.Store, reap bool) ([]SurvivingGroup, error) {
	rep, err := ledger.Recover(ctx, store)
	if err != nil {
		return nil, err
	}
	out := []SurvivingGroup{}
	for _, t := range rep.Tasks {
		for _, g := range t.ProcessGroups {
			if err := ctx.Err(); err != nil {
				return out, err
			}
			id := proc.Group{BootID: g.BootID, Pgid: g.Pgid, LeaderStart: g.LeaderStart, Program: g.Program}
			find := proc.Survivors
			if reap {
				find = proc.Reap
			}
			members, err := find(id)
			if err != nil {
				if errors.Is(err, proc.ErrUnsupportedPlatform) {
					return out, nil
				}
				return out, err
			}
			if len(members) == 0 {
				continue
			}
			s := SurvivingGroup{TaskID: t.TaskID, ProcessGroupRecord: g}
			for _, m := range members {
				s.Pids = append(s.Pids, m.Pid)
			}
			out = append(out, s)
		}
	}
	return out, nil
}

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
