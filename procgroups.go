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

// ProcessGroupSurvivors reads the live process groups recorded in store
// (those of tasks not yet terminal, which a host that died could not tear
// down: see [ledger.LiveProcessGroups]) and returns those with live
// members whose identity still matches on this host: the same boot ID, the
// same pgid, and a leader started at the recorded time (or, the leader
// gone, members no older than it). With reap each one is killed (SIGKILL
// to the group); a group whose boot ID, pgid or start time differs is
// never touched. Outside Linux there is nothing to match and the list is
// empty.
//
// It reads what the store's index names, not every task (see
// [ledger.IndexedStore]), and with reap it tells the store to forget the
// groups of this boot it found ended or ended itself, so the next start
// reads none of them again. A group of another boot is left in the index:
// its host may still be running it.
func ProcessGroupSurvivors(ctx context.Context, store ledger.Store, reap bool) ([]SurvivingGroup, error) {
	out := []SurvivingGroup{}
	var ended []ledger.TaskProcessGroup
	boot, _ := proc.BootID() // empty outside Linux: nothing is forgotten
	for g, err := range ledger.LiveProcessGroups(ctx, store) {
		if err == nil {
			err = ctx.Err()
		}
		if err != nil {
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
		if reap && boot != "" && g.BootID == boot {
			ended = append(ended, g)
		}
		if len(members) == 0 {
			continue
		}
		s := SurvivingGroup{TaskID: g.TaskID, ProcessGroupRecord: g.ProcessGroupRecord}
		for _, m := range members {
			s.Pids = append(s.Pids, m.Pid)
		}
		out = append(out, s)
	}
	if err := ledger.ForgetProcessGroups(ctx, store, ended); err != nil && !errors.Is(err, ledger.ErrReadOnly) {
		return out, err
	}
	return out, nil
}
