package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"

	"github.com/pabloagent/pablo/approval"
	"github.com/pabloagent/pablo/ledger"
)

// taskPageSize is how many tasks the Tasks page lists at a time.
const taskPageSize = 25

// taskResultLimit bounds the bytes of a task's output a task page shows.
const taskResultLimit = 8192

// taskRow is one task of the Tasks page.
type taskRow struct {
	ID       string
	Report   *ledger.TaskReport
	InFlight bool
	Error    string
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
	for _, id := range ids {
		rows = append(rows, in.taskRow(r.Context(), id))
	}
	data := map[string]any{"Tasks": rows, "After": after}
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
	if row.Report != nil {
		recs, err := approval.Records(r.Context(), in.store, id)
		if err != nil {
			row.Error = err.Error()
		}
		data["Approvals"] = recs
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
