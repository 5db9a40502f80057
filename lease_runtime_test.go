package pablo

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/internal/clock"
	"github.com/pabloagent/pablo/internal/pgtest"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/ledger/outcome"
	"github.com/pabloagent/pablo/ledger/postgres"
)

// stealTool is a host tool during whose call another host claims the
// task's lease, as if this host had been paused past its expiry.
type stealTool struct {
	thief *postgres.Store
	t     *testing.T
}

func (stealTool) Tools() []authority.ToolSpec {
	return []authority.ToolSpec{{ID: "bench.noop", Description: "no-op",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`)}}
}

func (s stealTool) Call(ctx context.Context, _ authority.Call) ledger.ToolResult {
	ids, err := s.thief.Tasks(ctx)
	if err == nil && len(ids) == 1 {
		_, err = s.thief.Claim(ctx, ids[0])
	}
	if err != nil {
		s.t.Errorf("claim: %v", err)
	}
	return ledger.ToolResult{Status: outcome.ToolCompleted}
}

// TestALostLeaseEndsTheTaskWithTheDeliveryItHad: on the PostgreSQL store,
// another host claims the task's lease while a tool call runs; the
// next barrier is refused (ledger.ErrLeaseLost), the task fails with the
// delivery of what that barrier guarded, and the tool call, which ran, is
// recorded as unknown, never as not sent. It starts a cluster of its own
// (torn down at cleanup): the root package has no other PostgreSQL test.
func TestALostLeaseEndsTheTaskWithTheDeliveryItHad(t *testing.T) {
	c, err := pgtest.Start(context.Background())
	if err != nil {
		t.Skipf("!!! NO POSTGRESQL SERVER, this test SKIPS: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	})
	db, err := c.CreateDB(context.Background(), "lease")
	if err != nil {
		t.Fatal(err)
	}
	opts := postgres.Options{URL: c.URL(db, "postgres"), Password: c.Password}
	store, err := postgres.Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	opts.Owner, opts.Clock = "thief", clock.NewManual(time.Now().Add(time.Hour)) // its renewer never fires
	thief, err := postgres.Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer thief.Close()
	rt := benchRuntimeStore(t, store, toolCallScript(1), stealTool{thief: thief, t: t})
	obj, _ := rt.Run(context.Background(), "go")
	// The first barrier after the claim is refused: the one that would
	// have sent the next model request, which therefore never left.
	if obj.Outcome.Status != event.StatusFailed || obj.Outcome.Code != outcome.FailEventSinkIO || obj.Outcome.Delivery != outcome.NotSent {
		t.Fatalf("a task whose lease was stolen: %+v, want failed, event_sink_io, not_sent", obj.Outcome)
	}
	// A host reading after the thief's lease sees the tool call, which ran
	// but whose settlement was refused, as unknown: never as completed,
	// never as retryable.
	opts.Owner, opts.Clock = "reader", clock.NewManual(time.Now().Add(3*time.Hour))
	reader, err := postgres.Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	ids, _ := reader.Tasks(context.Background())
	rep, err := ledger.RecoverTask(context.Background(), reader, ids[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Unknown) != 1 || rep.Unknown[0].Name != "bench.noop" || len(rep.Retryable) != 0 || rep.Outcome != nil {
		t.Fatalf("after the stolen lease: unknown %+v, retryable %+v, outcome %+v", rep.Unknown, rep.Retryable, rep.Outcome)
	}
}
