package acp

import (
	"encoding/json"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/ledger/outcome"
)

// The stop reasons as the reference maps them; everything else is -32603.
func TestStopReasonsAreTheReferences(t *testing.T) {
	t.Parallel()
	task := func(o event.Outcome) *pablo.TaskObject { return &pablo.TaskObject{Outcome: &o} }
	cases := []struct {
		name      string
		obj       *pablo.TaskObject
		cancelled bool
		want      sdk.StopReason // "" for -32603
	}{
		{"completed", task(event.Outcome{Status: outcome.Completed}), false, sdk.StopReasonEndTurn},
		{"cancelled", task(event.Outcome{Status: outcome.Cancelled}), false, sdk.StopReasonCancelled},
		{"policy denied", task(event.Outcome{Status: outcome.PolicyDenied}), false, sdk.StopReasonRefusal},
		{"output tokens", task(event.Outcome{Status: outcome.LimitExceeded, Limit: outcome.LimitOutputTokens}), false, sdk.StopReasonMaxTokens},
		{"model calls", task(event.Outcome{Status: outcome.LimitExceeded, Limit: outcome.LimitModelCalls}), false, sdk.StopReasonMaxTurnRequests},
		{"tool calls", task(event.Outcome{Status: outcome.LimitExceeded, Limit: outcome.LimitToolCalls}), false, sdk.StopReasonMaxTurnRequests},
		{"another limit", task(event.Outcome{Status: outcome.LimitExceeded, Limit: outcome.LimitCost}), false, ""},
		{"timed out", task(event.Outcome{Status: outcome.TimedOut}), false, ""},
		{"failed", task(event.Outcome{Status: outcome.Failed, Code: outcome.FailProviderRejected}), false, ""},
		{"never admitted", pablo.PreAdmissionFailure("invalid_configuration", "x"), false, ""},
		{"a late cancel of a completed task", task(event.Outcome{Status: outcome.Completed}), true, sdk.StopReasonCancelled},
		{"a late cancel of a failed task", task(event.Outcome{Status: outcome.Failed}), true, sdk.StopReasonCancelled},
	}
	for _, tc := range cases {
		got, err := stopReason(tc.obj, tc.cancelled)
		switch {
		case tc.want == "" && (err == nil || err.Code != -32603):
			t.Errorf("%s: %q %v, want -32603", tc.name, got, err)
		case tc.want != "" && (err != nil || got != tc.want):
			t.Errorf("%s: %q %v, want %s", tc.name, got, err, tc.want)
		}
	}
}

// A call's raw input or output too large for a frame is replaced by a
// note of its size: the update still goes out and the call still settles.
func TestRawPayloadsOverTheFrameBoundAreCut(t *testing.T) {
	t.Parallel()
	p := newProjector("s", extensions{}, nil, DefaultCoalesceBytes)
	p.maxRaw = 64
	var frames []string
	emit := func(b []byte) error { frames = append(frames, string(b)); return nil }
	big := json.RawMessage(`{"status":"completed","output":"` + strings.Repeat("x", 100) + `"}`)
	p.event(&event.Event{EventData: event.EventData{Type: event.ToolStarted, Call: &event.Call{ID: "c1", Name: "fs.read", Arguments: big}}}, emit)
	p.event(&event.Event{EventData: event.EventData{Type: event.ToolFinished, CallID: "c1", Name: "fs.read", Result: big}}, emit)
	if len(frames) != 2 || !strings.Contains(frames[0], `"rawInput":{"bytes":`) ||
		!strings.Contains(frames[1], `"rawOutput":{"bytes":`) || !strings.Contains(frames[1], `"status":"completed","truncated":true`) ||
		strings.Contains(frames[1], "xxxx") {
		t.Fatalf("frames %q", frames)
	}
}
