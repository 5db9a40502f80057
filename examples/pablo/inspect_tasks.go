package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/pabloagent/pablo/approval"
	"github.com/pabloagent/pablo/children"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/ledger"
)

// taskPageSize is how many tasks the Tasks page lists at a time.
const taskPageSize = 25

// taskResultLimit bounds the bytes of a task's output a task page shows.
const taskResultLimit = 8192

// taskRefreshSeconds is how often the page of a task in flight in
// another process reloads itself from the store.
const taskRefreshSeconds = 2

// taskProgress is what a task page reads from a task's records besides
// its recovery report: its event count, its context compactions and the
// handoffs its spawns carried.
type taskProgress struct {
	Events      int
	Compactions []compactionView
	Handoffs    []handoffView
	// Started is the first record's time; Finished the root's run.finished
	// event's, with the task's accounting (nil until the root finished).
	Started, Finished time.Time
	Accounting        *ledger.Accounting
}

// compactionView is one context compaction: its compaction-v1 record as
// it last stood (the finished event's, else the started one's).
type compactionView struct {
	AgentID string
	Time    time.Time
	event.Compaction
}

// handoffView is one handoff a spawn carried: the earlier child's result
// passed to the new child, by reference.
type handoffView struct {
	AgentID, CallID string
	children.Handoff
}

// taskProgressOf folds a task's records into its progress.
func taskProgressOf(recs []ledger.Record) taskProgress {
	var p taskProgress
	index := map[string]int{}
	for _, r := range recs {
		if p.Started.IsZero() {
			p.Started = r.Time
		}
		if r.Kind != ledger.RecordEvent {
			continue
		}
		p.Events++
		switch event.Type(r.Event.Type) {
		case event.RunFinished:
			var d struct {
				Accounting *ledger.Accounting `json:"accounting"`
			}
			if r.Event.ParentID == "" && json.Unmarshal(r.Event.Payload, &d) == nil {
				p.Finished, p.Accounting = r.Event.Time, d.Accounting
			}
		case event.CompactionStarted, event.CompactionFinished:
			var d struct {
				Compaction *event.Compaction `json:"compaction"`
			}
			if json.Unmarshal(r.Event.Payload, &d) != nil || d.Compaction == nil {
				continue
			}
			v := compactionView{AgentID: r.Event.AgentID, Time: r.Event.Time, Compaction: *d.Compaction}
			key := r.Event.AgentID + "\x00" + d.Compaction.ID
			if i, ok := index[key]; ok {
				p.Compactions[i] = v
			} else {
				index[key] = len(p.Compactions)
				p.Compactions = append(p.Compactions, v)
			}
		case event.ToolStarted:
			var d struct {
				Call *event.Call `json:"call"`
			}
			if json.Unmarshal(r.Event.Payload, &d) != nil || d.Call == nil || d.Call.Name != children.ToolID {
				continue
			}
			args, err := children.ParseArguments(d.Call.Arguments, nil)
			if err != nil || args.Action != children.ActionSpawn {
				continue
			}
			for _, h := range args.Request.Handoffs {
				p.Handoffs = append(p.Handoffs, handoffView{AgentID: r.Event.AgentID, CallID: d.Call.ID, Handoff: h})
			}
		}
	}
	return p
}

// taskRow is one task of the Tasks page.
type taskRow struct {
	ID       string
	Report   *ledger.TaskReport
	InFlight bool
	Error    string
	// Progress is read from the task's records: its times and accounting.
	Progress *taskProgress
}

// callView is a completed call with the start of its recorded result.
type callView struct {
	ledger.CallReport
	Result    string
	Truncated bool
}

// taskIDsAfter is one page of task IDs after after: from the store's
// pager when it has one, so the page never reads every ID.
func taskIDsAfter(ctx context.Context, store ledger.Store, after string, limit int) ([]string, error) {
	if p, ok := store.(ledger.TaskPager); ok {
		return p.TasksAfter(ctx, after, limit)
	}
	ids, err := store.Tasks(ctx)
	if err != nil {
		return nil, err
	}
	slices.Sort(ids)
	i, _ := slices.BinarySearch(ids, after)
	if i < len(ids) && ids[i] == after {
		i++
	}
	return ids[i:min(len(ids), i+limit)], nil
}

func (in *inspector) tasks(w http.ResponseWriter, r *http.Request) {
	if in.store == nil {
		http.Error(w, "no ledger: start pablo inspect with --store PATH|URL to see tasks", http.StatusNotFound)
		return
	}
	after := r.URL.Query().Get("after")
	ids, err := taskIDsAfter(r.Context(), in.store, after, in.pageSize+1)
	if err != nil {
		http.Error(w, "read the ledger: "+err.Error(), http.StatusInternalServerError)
		return
	}
	more := len(ids) > in.pageSize
	ids = ids[:min(len(ids), in.pageSize)]
	rows := make([]taskRow, 0, len(ids))
	data := map[string]any{"After": after}
	for _, id := range ids {
		row := in.taskRow(r.Context(), id)
		if row.InFlight {
			// A task in flight elsewhere: the page reloads until it settles.
			data["Refresh"] = in.refresh
		}
		rows = append(rows, row)
	}
	data["Tasks"] = rows
	if more {
		data["Next"] = ids[len(ids)-1]
	}
	in.render(w, "tasks", data)
}

func (in *inspector) taskRow(ctx context.Context, id string) taskRow {
	row := taskRow{ID: id}
	t, err := ledger.RecoverTask(ctx, in.store, id)
	switch {
	case errors.Is(err, ledger.ErrLeaseLive):
		row.InFlight = true
	case err != nil:
		row.Error = err.Error()
	default:
		row.Report = &t
	}
	if recs, err := in.store.Records(ctx, id); err == nil {
		p := taskProgressOf(recs)
		row.Progress = &p
	}
	return row
}

func (in *inspector) task(w http.ResponseWriter, r *http.Request) {
	if in.store == nil {
		http.Error(w, "no ledger: start pablo inspect with --store PATH|URL to see tasks", http.StatusNotFound)
		return
	}
	id := r.URL.Query().Get("id")
	row := in.taskRow(r.Context(), id)
	if row.Report == nil && !row.InFlight {
		w.WriteHeader(http.StatusNotFound)
		in.render(w, "task", map[string]any{"Task": row})
		return
	}
	data := map[string]any{"Task": row}
	// The records so far, read-only: a task in flight in another process
	// shows its compactions and handoffs as they are recorded, and its
	// page reloads itself until the task settles.
	if row.Progress != nil {
		data["Progress"] = *row.Progress
	}
	if row.InFlight {
		data["Refresh"], data["AsOf"] = in.refresh, in.clock.Now().UTC()
	}
	if row.Report != nil {
		recs, err := approval.Records(r.Context(), in.store, id)
		if err != nil {
			row.Error = err.Error()
		}
		data["Approvals"] = recs
		data["AgentTree"] = agentTree(row.Report.Agents)
		if o := row.Report.Outcome; o != nil && o.Result != "" {
			data["Result"], data["ResultTruncated"] = taskResult(r.Context(), in.store, o.Result)
		}
		var calls []callView
		for _, c := range row.Report.Completed {
			v := callView{CallReport: c}
			if c.Result != "" {
				v.Result, v.Truncated = taskResult(r.Context(), in.store, c.Result)
			}
			calls = append(calls, v)
		}
		data["Calls"] = calls
	}
	in.render(w, "task", data)
}

// agentNode is one agent of a task's tree with the agents it started.
type agentNode struct {
	ledger.AgentReport
	Children []*agentNode
}

// agentTree is a task's agents as the tree they form: the root (and any
// agent whose parent the records do not name) at the top, each child
// under its parent, in record order.
func agentTree(agents []ledger.AgentReport) []*agentNode {
	nodes := make(map[string]*agentNode, len(agents))
	for _, a := range agents {
		nodes[a.AgentID] = &agentNode{AgentReport: a}
	}
	var top []*agentNode
	for _, a := range agents {
		n := nodes[a.AgentID]
		if p, ok := nodes[a.ParentID]; ok && a.ParentID != a.AgentID {
			p.Children = append(p.Children, n)
		} else {
			top = append(top, n)
		}
	}
	return top
}

// taskResult is the start of a recorded result, as text when it is a
// JSON string.
func taskResult(ctx context.Context, store ledger.Store, ref ledger.ResultRef) (string, bool) {
	raw, err := store.Result(ctx, ref)
	if err != nil {
		return "(unreadable: " + err.Error() + ")", false
	}
	text := string(raw)
	var s string
	if json.Unmarshal(raw, &s) == nil {
		text = s
	}
	if len(text) > taskResultLimit {
		return text[:taskResultLimit], true
	}
	return text, false
}
