package engine

import (
	"context"
	"slices"
	"testing"

	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/ledger/outcome"
	"github.com/pabloagent/pablo/model"

	"github.com/pabloagent/pablo/ledger"
)

// countingModel answers "ok" and counts the requests that reach it.
type countingModel struct{ calls *int }

func (m countingModel) Info() model.Info { return model.Info{Provider: "test", Model: "counting"} }
func (m countingModel) Generate(_ context.Context, _ *model.Request, emit func(string) error) (*model.Response, error) {
	*m.calls++
	if err := emit("ok"); err != nil {
		return nil, err
	}
	return &model.Response{Text: "ok", FinishReason: model.FinishStop}, nil
}

// A model call the ledger refuses to reserve (no model call left) never
// reaches the model, and nothing announces it.
func TestModelCallRefusedReservationNeverReachesTheModel(t *testing.T) {
	ss := stage(t, stageOptions{limits: ledger.Limits{ModelCalls: ledger.Max(0)}})
	_, o := ss.modelTurn()
	if o == nil || o.Status != event.StatusLimitExceeded || o.Limit != outcome.LimitModelCalls {
		t.Fatalf("outcome %+v", o)
	}
	if *ss.model.calls != 0 || slices.Contains(ss.events, string(event.ModelStarted)) || len(ss.history) != 1 {
		t.Fatalf("model calls %d, events %v, history %d", *ss.model.calls, ss.events, len(ss.history))
	}
}

// A model.started event the sink refuses stops the call before it is
// dispatched: the ledger settles it as never sent, and the model is never
// asked.
func TestModelCallSinkRefusalNeverDispatches(t *testing.T) {
	ss := stage(t, stageOptions{refuse: event.ModelStarted})
	_, o := ss.modelTurn()
	if o == nil || o.Status != event.StatusFailed || o.Code != outcome.FailEventSinkIO {
		t.Fatalf("outcome %+v", o)
	}
	if got, want := ss.callStates(t, ledger.ModelCallKind), []string{"admitted:", "settled:failed"}; !slices.Equal(got, want) {
		t.Fatalf("ledger states %v, want %v", got, want)
	}
	acc, err := ss.t.root.Accounting(ss.agent)
	if err != nil || acc.ModelCalls.N != 0 || *ss.model.calls != 0 {
		t.Fatalf("dispatched %d, model calls %d (%v)", acc.ModelCalls.N, *ss.model.calls, err)
	}
}

// A model turn that answers joins the history, once the ledger settled
// its call and model.finished is out.
func TestModelTurnSettlesBeforeTheAnswerJoinsTheHistory(t *testing.T) {
	ss := stage(t, stageOptions{})
	resp, o := ss.modelTurn()
	if o != nil || resp.Text != "ok" {
		t.Fatalf("turn: %+v, %+v", resp, o)
	}
	if got, want := ss.callStates(t, ledger.ModelCallKind), []string{"admitted:", "dispatched:", "settled:completed"}; !slices.Equal(got, want) {
		t.Fatalf("ledger states %v, want %v", got, want)
	}
	want := []string{string(event.RunStarted), string(event.ModelStarted), string(event.TextDelta), string(event.ModelFinished)}
	if !slices.Equal(ss.events, want) || *ss.model.calls != 1 {
		t.Fatalf("events %v, want %v; model calls %d", ss.events, want, *ss.model.calls)
	}
	if last := ss.history[len(ss.history)-1]; last.Role != model.RoleAssistant || last.Content != "ok" {
		t.Fatalf("history ends with %+v", last)
	}
}
