package engine

import (
	"context"
	"reflect"
	"slices"
	"testing"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/event"
)

// lockedNotes is the notes tool with a check of its own (as workspace
// confinement or a command policy is): it denies every call.
type lockedNotes struct{ countedNotes }

func (lockedNotes) DecideCall(context.Context, authority.Call) (authority.Decision, bool) {
	return authority.Decision{Layer: "notes", RuleID: "notes.locked", Reason: "the note is locked"}, true
}

// TestACatalogsOwnDenialStopsAtValidate: a call the authority allows but
// its tool's own check denies (a CallDecider) stops at validate under that
// check's rule: recorded denied, never charged, started or run.
func TestACatalogsOwnDenialStopsAtValidate(t *testing.T) {
	ss := stage(t, stageOptions{catalog: func(n countedNotes) Catalog { return lockedNotes{n} }})
	rc, o := ss.resolve(noteCall(`{"note_id":"N-1"}`), "call_1_1")
	if o != nil {
		t.Fatalf("resolve: %+v", o)
	}
	_, o = ss.validate(rc)
	if o == nil || o.Status != event.StatusPolicyDenied || !reflect.DeepEqual(o.Rule, ruleOf("notes.locked")) {
		t.Fatalf("outcome %+v, want policy_denied by notes.locked", o)
	}
	if got, want := ss.states(t), []string{"admitted:", "settled:policy_denied"}; !slices.Equal(got, want) {
		t.Fatalf("ledger states %v, want %v", got, want)
	}
	if ss.calls != 0 || ss.dispatched(t) != 0 || slices.Contains(ss.events, string(event.ToolStarted)) {
		t.Fatalf("calls %d, dispatched %d, events %v", ss.calls, ss.dispatched(t), ss.events)
	}
}
