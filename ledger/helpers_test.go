package ledger

import (
	"context"
	"testing"
	"time"

	clk "github.com/pabloagent/pablo/internal/clock"
	"github.com/pabloagent/pablo/internal/ids"
)

// fakeClock is the module's one test clock, for deterministic times and
// deadlines.
type fakeClock = clk.Manual

func newFakeClock() *fakeClock {
	return clk.NewManual(time.Date(2026, 11, 10, 12, 0, 0, 123456789, time.FixedZone("X", 3600)))
}

func newRoot(t testing.TB, limits Limits) (*Root, *MemoryStore, *fakeClock) {
	t.Helper()
	store := NewMemoryStore()
	clock := newFakeClock()
	r, err := NewRoot(context.Background(), Options{
		Store: store, Limits: limits, Clock: clock, IDs: ids.NewSequential(0),
		InputDigest: "sha256:input", Fingerprint: "sha256:deploy",
	})
	if err != nil {
		t.Fatalf("NewRoot: %v", err)
	}
	return r, store, clock
}

var bg = context.Background()

// modelCall reserves, dispatches and settles one model call.
func modelCall(t testing.TB, r *Root, agent string, req ModelCall, s ModelSettlement) error {
	t.Helper()
	id, err := r.ReserveModelCall(bg, agent, req)
	if err != nil {
		return err
	}
	if err := r.Dispatch(bg, agent, id); err != nil {
		t.Fatalf("Dispatch: %v", err)
	}
	return r.SettleModelCall(bg, agent, id, s)
}

func usage(in, out uint64) Usage {
	return Usage{InputTokens: known(in), OutputTokens: known(out)}
}

func mustAccounting(t testing.TB, r *Root, agent string) Accounting {
	t.Helper()
	a, err := r.Accounting(agent)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
