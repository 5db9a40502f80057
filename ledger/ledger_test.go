package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pabloagent/pablo/ledger/outcome"

	"github.com/pabloagent/pablo/authority"
)

func TestEventsCarryRootSeqAgentSeqAndIDs(t *testing.T) {
	t.Parallel()
	r, _, clock := newRoot(t, Limits{})
	root := r.RootAgentID()
	child, err := r.StartAgent(bg, AgentSpec{ParentID: root})
	if err != nil {
		t.Fatal(err)
	}
	var got []Event
	for _, agent := range []string{root, child, root, child, child} {
		clock.Advance(1500 * time.Nanosecond)
		ev, err := r.Append(bg, agent, "tick", json.RawMessage(`{"a":1}`))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev)
	}
	wantSeq := []uint64{1, 1, 2, 2, 3}
	for i, ev := range got {
		if ev.RootSeq != uint64(i+1) || ev.Seq != wantSeq[i] {
			t.Errorf("event %d: root_seq %d seq %d, want %d %d", i, ev.RootSeq, ev.Seq, i+1, wantSeq[i])
		}
		if ev.RootID != r.ID() {
			t.Errorf("event %d: root ID %q", i, ev.RootID)
		}
		if ev.Time.Location() != time.UTC || ev.Time.Nanosecond()%1000 != 0 {
			t.Errorf("event %d: time %v is not UTC microseconds", i, ev.Time)
		}
	}
	if got[1].ParentID != root || got[1].AgentID != child || got[0].ParentID != "" {
		t.Errorf("parent/agent IDs wrong: %+v %+v", got[0], got[1])
	}
}

func TestConcurrentAppendsAreTotallyOrdered(t *testing.T) {
	t.Parallel()
	r, store, _ := newRoot(t, Limits{})
	const workers, each = 16, 200
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				if _, err := r.Append(bg, r.RootAgentID(), "x", nil); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := r.Flush(bg); err != nil {
		t.Fatal(err)
	}
	recs, _ := store.Records(bg, r.ID())
	var seq uint64
	for i, rec := range recs {
		if rec.N != uint64(i+1) {
			t.Fatalf("record %d has N %d", i, rec.N)
		}
		if rec.Kind == RecordEvent {
			seq++
			if rec.Event.RootSeq != seq || rec.Event.Seq != seq {
				t.Fatalf("event %d has root_seq %d seq %d", seq, rec.Event.RootSeq, rec.Event.Seq)
			}
		}
	}
	if seq != workers*each {
		t.Fatalf("%d events stored, want %d", seq, workers*each)
	}
}

// TestCeilingsAtTheLimitAndOnePast admits exactly n units under Max(n) and
// refuses the next with the right kind, for every ceiling.
func TestCeilingsAtTheLimitAndOnePast(t *testing.T) {
	t.Parallel()
	const n = 3
	cases := []struct {
		kind   outcome.LimitKind
		limits Limits
		// use consumes one unit (or the whole size n when big is true).
		use func(r *Root, agent string, i int, size uint64) error
		big bool
	}{
		{outcome.LimitModelCalls, Limits{ModelCalls: Max(n)}, func(r *Root, a string, i int, _ uint64) error {
			return modelCall(t, r, a, ModelCall{}, ModelSettlement{Status: outcome.Completed, Delivery: outcome.ResponseReceived, Reported: true})
		}, false},
		{outcome.LimitToolCalls, Limits{ToolCalls: Max(n)}, func(r *Root, a string, i int, _ uint64) error {
			id := fmt.Sprint("t", i)
			if err := r.AdmitToolCall(bg, a, ToolCall{ID: id, Name: "fs.read", Decision: authority.Decision{Allowed: true}}); err != nil {
				return err
			}
			r.Dispatch(bg, a, id)
			return r.SettleToolCall(bg, a, id, ToolSettlement{Status: outcome.ToolCompleted, Delivery: outcome.ResponseReceived})
		}, false},
		{outcome.LimitTotalTokens, Limits{TotalTokens: Max(n)}, func(r *Root, a string, i int, _ uint64) error {
			return modelCall(t, r, a, ModelCall{TokenBound: Max(1), CostBound: Max(0)}, ModelSettlement{Status: outcome.Completed, Delivery: outcome.ResponseReceived, Reported: true, Usage: usage(1, 0)})
		}, false},
		{outcome.LimitCost, Limits{CostMicroUSD: Max(n)}, func(r *Root, a string, i int, _ uint64) error {
			return modelCall(t, r, a, ModelCall{CostBound: Max(1)}, ModelSettlement{Status: outcome.Completed, Delivery: outcome.ResponseReceived, CostReported: true, CostMicroUSD: 1})
		}, false},
		{outcome.LimitEvents, Limits{Events: Max(n + 1)}, func(r *Root, a string, i int, _ uint64) error { // +1: the terminal slot
			_, err := r.Append(bg, a, "x", nil)
			return err
		}, false},
		{outcome.LimitContextBytes, Limits{ContextBytes: Max(n)}, func(r *Root, a string, i int, size uint64) error {
			id, err := r.ReserveModelCall(bg, a, ModelCall{ContextBytes: size})
			if err == nil {
				err = r.SettleModelCall(bg, a, id, ModelSettlement{Status: outcome.Cancelled, Delivery: outcome.NotSent})
			}
			return err
		}, true},
		{outcome.LimitToolInputBytes, Limits{ToolInputBytes: Max(n)}, func(r *Root, a string, i int, size uint64) error {
			id := fmt.Sprint("t", i)
			err := r.AdmitToolCall(bg, a, ToolCall{ID: id, InputBytes: size, Decision: authority.Decision{Allowed: true}})
			if err == nil {
				err = r.SettleToolCall(bg, a, id, ToolSettlement{Status: outcome.ToolCancelled, Delivery: outcome.NotSent})
			}
			return err
		}, true},
		{outcome.LimitToolOutputBytes, Limits{ToolOutputBytes: Max(n)}, func(r *Root, a string, i int, size uint64) error {
			id := fmt.Sprint("t", i)
			if err := r.AdmitToolCall(bg, a, ToolCall{ID: id, Decision: authority.Decision{Allowed: true}}); err != nil {
				return err
			}
			r.Dispatch(bg, a, id)
			return r.SettleToolCall(bg, a, id, ToolSettlement{Status: outcome.ToolCompleted, Delivery: outcome.ResponseReceived, OutputBytes: size})
		}, true},
		{outcome.LimitOutputBytes, Limits{OutputBytes: Max(n)}, func(r *Root, a string, i int, size uint64) error {
			child, err := r.StartAgent(bg, AgentSpec{ParentID: a})
			if err != nil {
				return err
			}
			_, err = r.Finish(bg, child, Finish{Outcome: Outcome{Status: outcome.Completed}, OutputBytes: size})
			return err
		}, true},
		{outcome.LimitInputBytes, Limits{InputBytes: Max(n)}, func(r *Root, a string, i int, size uint64) error {
			_, err := r.StartAgent(bg, AgentSpec{ParentID: a, InputBytes: size})
			return err
		}, true},
	}
	for _, tc := range cases {
		t.Run(string(tc.kind), func(t *testing.T) {
			t.Parallel()
			r, _, _ := newRoot(t, tc.limits)
			a := r.RootAgentID()
			if tc.big {
				if err := tc.use(r, a, 0, n); err != nil {
					t.Fatalf("exactly the limit refused: %v", err)
				}
				err := tc.use(r, a, 1, n+1)
				var le *LimitError
				if !errors.As(err, &le) || le.Kind != tc.kind || !errors.Is(err, ErrLimit) {
					t.Fatalf("one past the limit: got %v, want a %s LimitError", err, tc.kind)
				}
				return
			}
			for i := range n {
				if err := tc.use(r, a, i, 1); err != nil {
					t.Fatalf("unit %d of %d refused: %v", i+1, n, err)
				}
			}
			err := tc.use(r, a, n, 1)
			var le *LimitError
			if !errors.As(err, &le) || le.Kind != tc.kind || !errors.Is(err, ErrLimit) {
				t.Fatalf("unit %d: got %v, want a %s LimitError", n+1, err, tc.kind)
			}
		})
	}
}

func TestDeadlineRefusesAdmissionAsDuration(t *testing.T) {
	t.Parallel()
	r, _, clock := newRoot(t, Limits{DurationMillis: Max(1000)})
	a := r.RootAgentID()
	clock.Advance(999 * time.Millisecond)
	if _, err := r.ReserveModelCall(bg, a, ModelCall{ID: "m1"}); err != nil {
		t.Fatalf("before the deadline: %v", err)
	}
	clock.Advance(time.Millisecond)
	_, err := r.ReserveModelCall(bg, a, ModelCall{ID: "m2"})
	if !errors.Is(err, ErrDeadline) || !errors.Is(err, ErrLimit) {
		t.Fatalf("at the deadline: got %v, want ErrDeadline", err)
	}
	if err := r.AdmitToolCall(bg, a, ToolCall{ID: "t", Decision: authority.Decision{Allowed: true}}); !errors.Is(err, ErrDeadline) {
		t.Fatalf("tool at the deadline: got %v", err)
	}
	if d, ok := r.Deadline(a); !ok || !d.Equal(newFakeClock().Now().UTC().Truncate(time.Microsecond).Add(time.Second)) {
		t.Fatalf("Deadline = %v %v", d, ok)
	}
}

// TestLastUnitRaceNeverOvershoots: 64 goroutines race for the last unit of a
// root ceiling through two children; exactly the remaining units are granted.
func TestLastUnitRaceNeverOvershoots(t *testing.T) {
	t.Parallel()
	for _, kind := range []outcome.LimitKind{outcome.LimitModelCalls, outcome.LimitToolCalls, outcome.LimitTotalTokens} {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			const ceiling = 10
			var limits Limits
			switch kind {
			case outcome.LimitModelCalls:
				limits.ModelCalls = Max(ceiling)
			case outcome.LimitToolCalls:
				limits.ToolCalls = Max(ceiling)
			case outcome.LimitTotalTokens:
				limits.TotalTokens = Max(ceiling * 100)
			}
			r, _, _ := newRoot(t, limits)
			c1, _ := r.StartAgent(bg, AgentSpec{ParentID: r.RootAgentID()})
			c2, _ := r.StartAgent(bg, AgentSpec{ParentID: r.RootAgentID()})
			// Use all but the last unit.
			for i := range ceiling - 1 {
				if err := grab(r, c1, kind, fmt.Sprint("pre", i)); err != nil {
					t.Fatal(err)
				}
			}
			var mu sync.Mutex
			granted := 0
			var wg sync.WaitGroup
			start := make(chan struct{})
			for g := range 64 {
				wg.Go(func() {
					<-start
					agent := []string{c1, c2}[g%2]
					err := grab(r, agent, kind, fmt.Sprint("race", g))
					if err == nil {
						mu.Lock()
						granted++
						mu.Unlock()
					} else if !errors.Is(err, ErrLimit) {
						t.Error(err)
					}
				})
			}
			close(start)
			wg.Wait()
			if granted != 1 {
				t.Fatalf("%d goroutines got the last unit, want exactly 1", granted)
			}
		})
	}
}

// grab takes one unit of kind and leaves it charged.
func grab(r *Root, agent string, kind outcome.LimitKind, id string) error {
	switch kind {
	case outcome.LimitToolCalls:
		if err := r.AdmitToolCall(bg, agent, ToolCall{ID: id, Decision: authority.Decision{Allowed: true}}); err != nil {
			return err
		}
		return r.Dispatch(bg, agent, id)
	case outcome.LimitTotalTokens:
		id, err := r.ReserveModelCall(bg, agent, ModelCall{ID: id, TokenBound: Max(100)})
		if err != nil {
			return err
		}
		return r.Dispatch(bg, agent, id)
	}
	id, err := r.ReserveModelCall(bg, agent, ModelCall{ID: id})
	if err != nil {
		return err
	}
	return r.Dispatch(bg, agent, id)
}

func TestTokenLimitIsReportedBeforeCost(t *testing.T) {
	t.Parallel()
	r, _, _ := newRoot(t, Limits{TotalTokens: Max(10), CostMicroUSD: Max(10)})
	_, err := r.ReserveModelCall(bg, r.RootAgentID(), ModelCall{TokenBound: Max(11), CostBound: Max(11)})
	var le *LimitError
	if !errors.As(err, &le) || le.Kind != outcome.LimitTotalTokens {
		t.Fatalf("got %v, want total_tokens first", err)
	}
	// The same order holds when the cost ceiling is on the root and the
	// token ceiling on a child.
	child, _ := r.StartAgent(bg, AgentSpec{ParentID: r.RootAgentID(), Limits: Limits{TotalTokens: Max(5), CostMicroUSD: Max(10)}})
	_, err = r.ReserveModelCall(bg, child, ModelCall{TokenBound: Max(6), CostBound: Max(11)})
	if !errors.As(err, &le) || le.Kind != outcome.LimitTotalTokens || le.AgentID != child {
		t.Fatalf("got %v, want the child's total_tokens", err)
	}
}

func TestHardCeilingNeedsAnAttestedBound(t *testing.T) {
	t.Parallel()
	for _, limits := range []Limits{{TotalTokens: Max(1000)}, {CostMicroUSD: Max(1000)}} {
		r, _, _ := newRoot(t, limits)
		_, err := r.ReserveModelCall(bg, r.RootAgentID(), ModelCall{})
		if !errors.Is(err, ErrNoBound) || !errors.Is(err, ErrLimit) {
			t.Fatalf("%+v: got %v, want ErrNoBound", limits, err)
		}
	}
	// Unlimited ceilings need no bound.
	r, _, _ := newRoot(t, Limits{})
	if _, err := r.ReserveModelCall(bg, r.RootAgentID(), ModelCall{}); err != nil {
		t.Fatal(err)
	}
}

func TestSettlementRules(t *testing.T) {
	t.Parallel()
	type want struct {
		calls   uint64
		charged Count
		usageIn Count
		err     error
	}
	bound := ModelCall{TokenBound: Max(100), CostBound: Max(50)}
	cases := []struct {
		name string
		req  ModelCall
		s    ModelSettlement
		skip bool // settle without dispatch
		want want
	}{
		{"ActualIsChargedWhenKnown", bound, ModelSettlement{Status: outcome.Completed, Delivery: outcome.ResponseReceived, Reported: true, Usage: usage(30, 12)},
			false, want{calls: 1, charged: known(42), usageIn: known(30)}},
		{"CacheTokensAreNotCharged", bound, ModelSettlement{Status: outcome.Completed, Delivery: outcome.ResponseReceived, Reported: true,
			Usage: Usage{InputTokens: known(30), OutputTokens: known(12), CacheReadTokens: known(20), CacheWriteTokens: known(5)}},
			false, want{calls: 1, charged: known(42), usageIn: known(30)}},
		{"UnknownUsageKeepsTheReservation", bound, ModelSettlement{Status: outcome.Failed, Delivery: outcome.ResponseReceived},
			false, want{calls: 1, charged: known(100), usageIn: unknownCount()}},
		{"UncertainDeliveryKeepsTheReservation", bound, ModelSettlement{Status: outcome.TimedOut, Delivery: outcome.MayHaveBeenSent, Reported: true, Usage: usage(1, 1)},
			false, want{calls: 1, charged: known(100), usageIn: known(1)}},
		{"ProvenNotSentReleasesToZeroButCounts", bound, ModelSettlement{Status: outcome.Failed, Delivery: outcome.NotSent},
			false, want{calls: 1, charged: known(0), usageIn: known(0)}},
		{"NeverDispatchedCountsNothing", bound, ModelSettlement{Status: outcome.Cancelled, Delivery: outcome.MayHaveBeenSent},
			true, want{calls: 0, charged: known(0), usageIn: known(0)}},
		{"ActualAboveBoundIsChargedAndReported", bound, ModelSettlement{Status: outcome.Completed, Delivery: outcome.ResponseReceived, Reported: true, Usage: usage(90, 20)},
			false, want{calls: 1, charged: known(110), usageIn: known(90), err: ErrBoundViolated}},
		{"MissingUsageWithoutBoundIsUnknown", ModelCall{}, ModelSettlement{Status: outcome.Completed, Delivery: outcome.ResponseReceived},
			false, want{calls: 1, charged: unknownCount(), usageIn: unknownCount()}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, _, _ := newRoot(t, Limits{})
			a := r.RootAgentID()
			id, err := r.ReserveModelCall(bg, a, tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.skip {
				if err := r.Dispatch(bg, a, id); err != nil {
					t.Fatal(err)
				}
			}
			err = r.SettleModelCall(bg, a, id, tc.s)
			if !errors.Is(err, tc.want.err) || (tc.want.err == nil && err != nil) {
				t.Fatalf("settle: got %v, want %v", err, tc.want.err)
			}
			acc := mustAccounting(t, r, a)
			if acc.ModelCalls != known(tc.want.calls) || acc.ChargedTokens != tc.want.charged ||
				acc.Usage.InputTokens != tc.want.usageIn || acc.ReservedTokens != 0 {
				t.Fatalf("accounting %+v, want calls %d charged %v input %v reserved 0", acc, tc.want.calls, tc.want.charged, tc.want.usageIn)
			}
			// A second settlement is an error and charges nothing.
			err = r.SettleModelCall(bg, a, id, tc.s)
			if !errors.Is(err, ErrAlreadySettled) || !errors.Is(err, ErrState) {
				t.Fatalf("second settle: got %v, want ErrAlreadySettled", err)
			}
			if again := mustAccounting(t, r, a); again != acc {
				t.Fatalf("second settle changed accounting: %+v -> %+v", acc, again)
			}
		})
	}
}

func TestNoModelCallsMeansKnownZeroUsage(t *testing.T) {
	t.Parallel()
	r, _, _ := newRoot(t, Limits{})
	b, _ := json.Marshal(mustAccounting(t, r, r.RootAgentID()))
	want := `{"model_calls":"0","tool_calls":"0","usage":{"input_tokens":"0","output_tokens":"0","cache_read_input_tokens":"0","cache_write_input_tokens":"0"},"cost_microusd":"0","charged_tokens":"0","charged_cost_microusd":"0"}`
	if string(b) != want {
		t.Fatalf("got %s\nwant %s", b, want)
	}
}

func TestChildrenChargeThemselvesAndTheRoot(t *testing.T) {
	t.Parallel()
	r, _, _ := newRoot(t, Limits{ModelCalls: Max(10)})
	root := r.RootAgentID()
	c1, _ := r.StartAgent(bg, AgentSpec{ParentID: root, Limits: Limits{ModelCalls: Max(2)}})
	c2, _ := r.StartAgent(bg, AgentSpec{ParentID: root})
	ok := ModelSettlement{Status: outcome.Completed, Delivery: outcome.ResponseReceived, Reported: true, Usage: usage(1, 1)}
	for range 2 {
		if err := modelCall(t, r, c1, ModelCall{}, ok); err != nil {
			t.Fatal(err)
		}
	}
	// c1's own ceiling stops c1 ...
	if err := modelCall(t, r, c1, ModelCall{}, ok); !errors.Is(err, ErrLimit) {
		t.Fatalf("c1 past its ceiling: %v", err)
	}
	// ... but not its sibling.
	if err := modelCall(t, r, c2, ModelCall{}, ok); err != nil {
		t.Fatalf("sibling refused: %v", err)
	}
	if err := modelCall(t, r, root, ModelCall{}, ok); err != nil {
		t.Fatal(err)
	}
	for agent, want := range map[string]uint64{c1: 2, c2: 1, root: 4} {
		acc := mustAccounting(t, r, agent)
		if acc.ModelCalls.N != want || acc.ChargedTokens.N != 2*want {
			t.Errorf("agent %s: %+v, want %d calls", agent, acc, want)
		}
	}
}

func TestChildCeilingsCanOnlyBeLower(t *testing.T) {
	t.Parallel()
	r, _, _ := newRoot(t, Limits{ToolCalls: Max(5)})
	for _, lim := range []Limits{{ToolCalls: Max(6)}, {ToolCalls: Max(1 << 40)}} {
		_, err := r.StartAgent(bg, AgentSpec{ParentID: r.RootAgentID(), Limits: lim})
		var inv *InvalidError
		if !errors.As(err, &inv) || inv.Field != "AgentSpec.Limits.tool_calls" {
			t.Fatalf("limits %+v: got %v", lim, err)
		}
	}
	if _, err := r.StartAgent(bg, AgentSpec{ParentID: r.RootAgentID(), Limits: Limits{ToolCalls: Max(5), ModelCalls: Max(1)}}); err != nil {
		t.Fatalf("equal or lower ceilings refused: %v", err)
	}
	// An unlimited child field inherits the parent's ceiling.
	c, err := r.StartAgent(bg, AgentSpec{ParentID: r.RootAgentID()})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Flush(bg); err != nil {
		t.Fatal(err)
	}
	recs, _ := r.store.Records(bg, r.ID())
	if got := recs[len(recs)-1].Agent; got == nil || got.AgentID != c || got.Limits.ToolCalls != Max(5) {
		t.Fatalf("child record %+v does not inherit tool_calls 5", got)
	}
}

func TestDeniedToolCallIsRecordedButNeverDispatched(t *testing.T) {
	t.Parallel()
	r, _, _ := newRoot(t, Limits{ToolCalls: Max(0)})
	a := r.RootAgentID()
	denied := authority.Decision{Layer: "policy", RuleID: "no-writes", Reason: "writes are off"}
	if err := r.AdmitToolCall(bg, a, ToolCall{ID: "t1", Name: "fs.write", Decision: denied}); err != nil {
		t.Fatalf("a denied call is recorded even at a zero ceiling: %v", err)
	}
	if err := r.Dispatch(bg, a, "t1"); !errors.Is(err, ErrState) {
		t.Fatalf("dispatch of a denied call: %v", err)
	}
	if err := r.SettleToolCall(bg, a, "t1", ToolSettlement{Status: outcome.ToolPolicyDenied, Delivery: outcome.NotSent, Error: "no-writes"}); err != nil {
		t.Fatal(err)
	}
	if acc := mustAccounting(t, r, a); acc.ToolCalls.N != 0 {
		t.Fatalf("denied call counted: %+v", acc)
	}
}

func TestCallStateMachineRejectsOutOfOrderTransitions(t *testing.T) {
	t.Parallel()
	r, _, _ := newRoot(t, Limits{})
	a := r.RootAgentID()
	id, _ := r.ReserveModelCall(bg, a, ModelCall{})
	if err := r.Dispatch(bg, a, id); err != nil {
		t.Fatal(err)
	}
	if err := r.Dispatch(bg, a, id); !errors.Is(err, ErrState) {
		t.Fatalf("second dispatch: %v", err)
	}
	if err := r.SettleToolCall(bg, a, id, ToolSettlement{Status: outcome.ToolCompleted, Delivery: outcome.ResponseReceived}); !errors.Is(err, ErrState) {
		t.Fatalf("tool settlement of a model call: %v", err)
	}
	if err := r.Dispatch(bg, a, "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown call: %v", err)
	}
	if _, err := r.ReserveModelCall(bg, a, ModelCall{ID: id}); !errors.Is(err, ErrState) {
		t.Fatalf("duplicate call ID: %v", err)
	}
	if err := r.SettleToolCall(bg, a, id, ToolSettlement{Status: "done", Delivery: outcome.ResponseReceived}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("unknown status: %v", err)
	}
	if err := r.SettleModelCall(bg, a, id, ModelSettlement{Status: outcome.Completed, Delivery: "sent"}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("unknown delivery: %v", err)
	}
}

func TestFinishWaitsForChildrenAndCalls(t *testing.T) {
	t.Parallel()
	r, _, _ := newRoot(t, Limits{})
	root := r.RootAgentID()
	child, _ := r.StartAgent(bg, AgentSpec{ParentID: root})
	done := Finish{Outcome: Outcome{Status: outcome.Completed}}
	if _, err := r.Finish(bg, root, done); !errors.Is(err, ErrState) {
		t.Fatalf("root finished before its child: %v", err)
	}
	id, _ := r.ReserveModelCall(bg, child, ModelCall{})
	if _, err := r.Finish(bg, child, done); !errors.Is(err, ErrState) {
		t.Fatalf("child finished with an open call: %v", err)
	}
	r.SettleModelCall(bg, child, id, ModelSettlement{Status: outcome.Cancelled, Delivery: outcome.NotSent})
	if _, err := r.Finish(bg, child, done); err != nil {
		t.Fatal(err)
	}
	ev, err := r.Finish(bg, root, Finish{Outcome: Outcome{Status: outcome.Failed, Code: outcome.FailProviderTransport, Delivery: outcome.MayHaveBeenSent}})
	if err != nil || ev.Type != "run.finished" {
		t.Fatalf("root finish: %v %+v", err, ev)
	}
	if _, err := r.Append(bg, root, "late", nil); !errors.Is(err, ErrState) {
		t.Fatalf("append after finish: %v", err)
	}
}

func TestOutcomeValidation(t *testing.T) {
	t.Parallel()
	bad := []Outcome{
		{},
		{Status: "done"},
		{Status: outcome.PolicyDenied},
		{Status: outcome.LimitExceeded},
		{Status: outcome.Failed, Code: outcome.FailToolExecution},
		{Status: outcome.Completed, Limit: outcome.LimitCost},
	}
	for _, o := range bad {
		if err := o.validate(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v accepted", o)
		}
	}
}

func TestTerminalEventSlotIsReserved(t *testing.T) {
	t.Parallel()
	r, _, _ := newRoot(t, Limits{Events: Max(3)})
	root := r.RootAgentID()
	child, err := r.StartAgent(bg, AgentSpec{ParentID: root})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Append(bg, child, "x", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Append(bg, root, "x", nil); !errors.Is(err, ErrLimit) {
		t.Fatalf("ordinary event ate a terminal slot: %v", err)
	}
	for _, a := range []string{child, root} {
		if _, err := r.Finish(bg, a, Finish{Outcome: Outcome{Status: outcome.Cancelled}}); err != nil {
			t.Fatalf("terminal event of %s refused: %v", a, err)
		}
	}
}

func TestInvalidPayloadIsRefused(t *testing.T) {
	t.Parallel()
	r, _, _ := newRoot(t, Limits{})
	if _, err := r.Append(bg, r.RootAgentID(), "x", json.RawMessage(`{"a":`)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("got %v", err)
	}
}

// failingStore fails every append.
type failingStore struct{ *MemoryStore }

func (failingStore) Append(_ context.Context, recs []Record) error { return errors.New("disk full") }

func TestStoreFailureStopsTheRoot(t *testing.T) {
	t.Parallel()
	r, err := NewRoot(bg, Options{Store: failingStore{NewMemoryStore()}})
	if err != nil {
		t.Fatalf("NewRoot is not a barrier, yet it failed: %v", err)
	}
	a := r.RootAgentID()
	if err := r.AdmitToolCall(bg, a, ToolCall{ID: "t1", Name: "fs.read", Decision: authority.Decision{Allowed: true}}); err != nil {
		t.Fatal(err)
	}
	// The first barrier fails, and the root accepts nothing after it.
	err = r.Dispatch(bg, a, "t1")
	var se *StoreError
	if !errors.As(err, &se) || !errors.Is(err, ErrStore) {
		t.Fatalf("dispatch: got %v", err)
	}
	if _, err := r.Append(bg, a, "x", nil); !errors.Is(err, ErrStore) {
		t.Fatalf("append after a failed barrier: got %v", err)
	}
}

// TestUnsetRootCeilingIsUnlimitedAndRecordedSo: a root ceiling that is not
// set (the zero Limit) bounds nothing, and the task record says
// "unlimited", as a deployment's explicit "unlimited" would; Max(0) is a
// ceiling of zero, not "not set".
func TestUnsetRootCeilingIsUnlimitedAndRecordedSo(t *testing.T) {
	t.Parallel()
	r, store, _ := newRoot(t, Limits{ModelCalls: Max(0)})
	a := r.RootAgentID()
	if err := r.AdmitToolCall(bg, a, ToolCall{ID: "t1", Name: "fs.read", Decision: authority.Decision{Allowed: true}}); err != nil {
		t.Fatalf("an unset tool_calls ceiling refused a call: %v", err)
	}
	if _, err := r.ReserveModelCall(bg, a, ModelCall{}); !errors.Is(err, ErrLimit) {
		t.Fatalf("Max(0) model_calls admitted a call: %v", err)
	}
	if err := r.Flush(bg); err != nil {
		t.Fatal(err)
	}
	recs, _ := store.Records(bg, r.ID())
	lim := recs[0].Task.Limits
	if lim.ToolCalls != Unlimited() || lim.ModelCalls != Max(0) {
		t.Fatalf("task record limits %+v", lim)
	}
	b, _ := json.Marshal(lim)
	if !strings.Contains(string(b), `"model_calls":"0","tool_calls":"unlimited"`) {
		t.Fatalf("task record limits marshal as %s", b)
	}
}
