package pablo_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/approval"
	"github.com/pabloagent/pablo/ledger"
)

// TestLedgerMidApprovalWaitTellsTheTruth: what the store holds while a
// call waits for its approver (what a host killed -9 at that moment
// leaves) says the call was never sent: it is retryable, not unknown and
// not completed, and the ledger holds the approval request bound to it.
func TestLedgerMidApprovalWaitTellsTheTruth(t *testing.T) {
	store := ledger.NewMemoryStore()
	rt := gatedRuntime(t, store)
	defer rt.Close()
	asked, release := make(chan approval.Request, 1), make(chan struct{})
	task, err := rt.StartTask(context.Background(), pablo.TaskRequest{Input: "read N-1", Approver: approverFunc(func(ctx context.Context, req approval.Request) (approval.Answer, error) {
		asked <- req
		<-release
		return approval.Reject, nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	req := <-asked
	rep, err := ledger.RecoverTask(context.Background(), store, req.TaskID)
	close(release)
	for range task.Events() {
	}
	task.Wait()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(rep)
	if rep.Outcome != nil || len(rep.Unknown) != 0 {
		t.Fatalf("a call waiting for its approver reads as unknown or the task as ended: %s", b)
	}
	for _, c := range rep.Completed {
		if c.CallID == req.CallID {
			t.Fatalf("the waiting call reads as completed: %s", b)
		}
	}
	found := false
	for _, c := range rep.Retryable {
		found = found || c.CallID == req.CallID
	}
	if !found {
		t.Fatalf("the waiting call %s is not retryable: %s", req.CallID, b)
	}
}
