// Package ledgertest is the conformance suite every [ledger.Store] passes:
// the memory store, the bbolt store and the PostgreSQL store run it, and a
// host's own store can too:
//
//	func TestMyStore(t *testing.T) {
//		ledgertest.Run(t, ledgertest.Factory{Open: openMyStore})
//	}
//
// It is generic over records: every payload field of [ledger.Record] is
// found by reflection and filled, so a record kind added to the ledger is
// checked in every store without a change here.
package ledgertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/internal/clock"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/ledger/outcome"
)

// Factory opens the stores under test.
type Factory struct {
	// Open returns a fresh, empty store. The suite closes it.
	Open func(t *testing.T) ledger.Store
	// Reopen, when set, opens again the store the last Open of this test
	// returned, after the suite closed it: the suite then checks that what
	// was acknowledged is still there. Nil for a store that does not
	// outlive its value (the memory store).
	Reopen func(t *testing.T) ledger.Store
}

// Run runs every conformance test against f's stores, each as a subtest.
func Run(t *testing.T, f Factory) {
	t.Run("EveryRecordKindRoundTrips", func(t *testing.T) { everyKindRoundTrips(t, f) })
	t.Run("TasksAreListedInBytewiseOrder", func(t *testing.T) { tasksInOrder(t, f) })
	t.Run("UnknownTaskAndResultAreNotFound", func(t *testing.T) { notFound(t, f) })
	t.Run("ResultsAreKeptOnceUnderTheirAddress", func(t *testing.T) { results(t, f) })
	t.Run("AResultReadsBackUnderItsAddressWhateverItsText", func(t *testing.T) { resultBytes(t, f) })
	t.Run("ConcurrentAppendsAreEachAcknowledged", func(t *testing.T) { concurrent(t, f) })
	t.Run("InvalidRecordIsRefused", func(t *testing.T) { invalid(t, f) })
	t.Run("ClosedStoreRefuses", func(t *testing.T) { closed(t, f) })
	t.Run("VolatileRecordsAreKeptOnce", func(t *testing.T) { volatile(t, f) })
	t.Run("RecoveryTellsCompletedUnknownAndRetryable", func(t *testing.T) { recovery(t, f) })
	t.Run("PendingTasksAreThoseNotYetTerminal", func(t *testing.T) { pendingAfterTerminal(t, f) })
	t.Run("ProcessGroupsAreLiveUntilTheirTaskEndsOrTheyAreReaped", func(t *testing.T) { liveGroupsAfterReaping(t, f) })
	t.Run("SessionTasksAreListedFromTheirTaskRecords", func(t *testing.T) { sessionsListing(t, f) })
	t.Run("EveryTaskIsWalkedOnceAPageAtATime", func(t *testing.T) { pagedTasks(t, f) })
}

var bg = context.Background()

// kinds returns one record of every payload field of ledger.Record, each
// filled with non-zero values, for task id from N 1 on, and the kind each
// field's record gets. A field added to Record is found here by itself.
func kinds(id string, at time.Time) []ledger.Record {
	var recs []ledger.Record
	rt := reflect.TypeFor[ledger.Record]()
	n := uint64(0)
	for i := range rt.NumField() {
		f := rt.Field(i)
		switch f.Name {
		case "TaskID", "N", "Kind", "Time":
			continue
		}
		n++
		r := ledger.Record{TaskID: id, N: n, Time: at}
		v := reflect.ValueOf(&r).Elem().Field(i)
		kind := ledger.RecordKind(jsonName(f))
		r.Kind = kind
		if f.Type.Kind() == reflect.Pointer {
			p := reflect.New(f.Type.Elem())
			fill(p.Elem(), id, at)
			v.Set(p)
		} else {
			fill(v, id, at)
		}
		recs = append(recs, r)
	}
	return recs
}

func jsonName(f reflect.StructField) string {
	tag := f.Tag.Get("json")
	for i := range len(tag) {
		if tag[i] == ',' {
			return tag[:i]
		}
	}
	return tag
}

// fill sets every exported field of v to a value that survives a JSON
// round trip and is not its zero value where the type allows it.
func fill(v reflect.Value, id string, at time.Time) {
	switch v.Interface().(type) {
	case time.Time:
		v.Set(reflect.ValueOf(at))
		return
	case json.RawMessage:
		v.SetBytes([]byte(`{"k":"v"}`))
		return
	case ledger.ResultRef:
		v.SetString(string(ledger.RefOf([]byte(`{"k":"v"}`))))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("x-" + id)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(7)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), id, at)
			}
		}
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem(), id, at)
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0), id, at)
		v.Set(s)
	case reflect.Map:
		if v.Type().Key().Kind() == reflect.String {
			m := reflect.MakeMap(v.Type())
			e := reflect.New(v.Type().Elem()).Elem()
			fill(e, id, at)
			m.SetMapIndex(reflect.ValueOf("k").Convert(v.Type().Key()), e)
			v.Set(m)
		}
	}
}

// sameRecords compares records by their JSON, which is what a store keeps.
func sameRecords(t *testing.T, got, want []ledger.Record) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d records, want %d", len(got), len(want))
	}
	for i := range want {
		g, _ := json.Marshal(got[i])
		w, _ := json.Marshal(want[i])
		if string(g) != string(w) {
			t.Fatalf("record %d:\n got %s\nwant %s", i, g, w)
		}
	}
}

func open(t *testing.T, f Factory) ledger.Store {
	t.Helper()
	s := f.Open(t)
	t.Cleanup(func() { s.Close() })
	return s
}

func reopen(t *testing.T, f Factory, s ledger.Store) ledger.Store {
	t.Helper()
	if f.Reopen == nil {
		return s
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	s = f.Reopen(t)
	t.Cleanup(func() { s.Close() })
	return s
}

var at = time.Date(2026, 12, 1, 10, 0, 0, 123456000, time.UTC)

func everyKindRoundTrips(t *testing.T, f Factory) {
	s := open(t, f)
	want := kinds("task-kinds", at)
	// One Append per record and one for all of a second task: both paths.
	for i := range want {
		if err := s.Append(bg, want[i:i+1]); err != nil {
			t.Fatalf("Append %s: %v", want[i].Kind, err)
		}
	}
	other := kinds("task-kinds-2", at)
	if err := s.Append(bg, other); err != nil {
		t.Fatal(err)
	}
	s = reopen(t, f, s)
	for id, want := range map[string][]ledger.Record{"task-kinds": want, "task-kinds-2": other} {
		got, err := s.Records(bg, id)
		if err != nil {
			t.Fatal(err)
		}
		sameRecords(t, got, want)
	}
}

func tasksInOrder(t *testing.T, f Factory) {
	s := open(t, f)
	ids := []string{"b", "a", "B", "a-1", "a_1", "ä", "Z9"}
	for _, id := range ids {
		r := ledger.Record{TaskID: id, N: 1, Kind: ledger.RecordEvent, Time: at,
			Event: ledger.Event{RootSeq: 1, Seq: 1, RootID: id, AgentID: "a", Type: "t", Time: at}}
		if err := s.Append(bg, []ledger.Record{r}); err != nil {
			t.Fatal(err)
		}
	}
	s = reopen(t, f, s)
	got, err := s.Tasks(bg)
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Sorted(slices.Values(ids))
	if !slices.Equal(got, want) {
		t.Fatalf("Tasks = %q, want %q (bytewise, as Go sorts strings)", got, want)
	}
}

func notFound(t *testing.T, f Factory) {
	s := open(t, f)
	if _, err := s.Records(bg, "no-such-task"); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("Records of an unknown task: %v, want ErrNotFound", err)
	}
	if _, err := s.Result(bg, ledger.RefOf([]byte(`"nothing"`))); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("Result of an unknown ref: %v, want ErrNotFound", err)
	}
}

func results(t *testing.T, f Factory) {
	s := open(t, f)
	data := json.RawMessage(`{"answer":42}`)
	ref := ledger.RefOf(data)
	recs := []ledger.Record{
		{TaskID: "r1", N: 1, Kind: ledger.RecordResult, Time: at, Result: &ledger.ResultRecord{ID: ref, Data: data}},
	}
	if err := s.Append(bg, recs); err != nil {
		t.Fatal(err)
	}
	// The same result from another task is kept once.
	recs[0].TaskID = "r2"
	if err := s.Append(bg, recs); err != nil {
		t.Fatal(err)
	}
	s = reopen(t, f, s)
	got, err := s.Result(bg, ref)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(data) {
		t.Fatalf("Result = %s, want %s", got, data)
	}
}

// resultBytes: a result whose text holds what an HTML-safe JSON encoder
// rewrites ('<', '>', '&', U+2028, U+2029: a shell command, a model's
// answer) reads back byte for byte, in its record and by its address, so
// its content address still checks out. A store that re-encodes it fails
// its own tamper check and can no longer read the task.
func resultBytes(t *testing.T, f Factory) {
	s := open(t, f)
	data, err := ledger.Canonical([]byte(`{"command":"echo x >> append.log && cat <in>","sep":"a\u2028b\u2029c"}`))
	if err != nil {
		t.Fatal(err)
	}
	ref := ledger.RefOf(data)
	recs := []ledger.Record{{TaskID: "h1", N: 1, Kind: ledger.RecordResult, Time: at, Result: &ledger.ResultRecord{ID: ref, Data: data}}}
	if err := s.Append(bg, recs); err != nil {
		t.Fatal(err)
	}
	s = reopen(t, f, s)
	got, err := s.Records(bg, "h1")
	if err != nil {
		t.Fatalf("the task no longer reads: %v", err)
	}
	if len(got) != 1 || got[0].Result == nil || string(got[0].Result.Data) != string(data) {
		t.Fatalf("the record's result reads back as %+v, want %s", got, data)
	}
	if kept, err := s.Result(bg, ref); err != nil || string(kept) != string(data) {
		t.Fatalf("Result = %s, %v; want %s", kept, err, data)
	}
}

func concurrent(t *testing.T, f Factory) {
	s := open(t, f)
	const tasks, appends = 16, 12
	var wg sync.WaitGroup
	errs := make(chan error, tasks)
	for w := range tasks {
		wg.Go(func() {
			id := fmt.Sprintf("c%02d", w)
			for n := range appends {
				r := ledger.Record{TaskID: id, N: uint64(n + 1), Kind: ledger.RecordEvent, Time: at,
					Event: ledger.Event{RootSeq: uint64(n + 1), Seq: uint64(n + 1), RootID: id, AgentID: "a", Type: "e", Time: at}}
				if err := s.Append(bg, []ledger.Record{r}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	s = reopen(t, f, s)
	for w := range tasks {
		recs, err := s.Records(bg, fmt.Sprintf("c%02d", w))
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != appends {
			t.Fatalf("task c%02d: %d records, want %d", w, len(recs), appends)
		}
		for i, r := range recs {
			if r.N != uint64(i+1) {
				t.Fatalf("task c%02d: record %d has N %d", w, i, r.N)
			}
		}
	}
}

func invalid(t *testing.T, f Factory) {
	s := open(t, f)
	for _, r := range []ledger.Record{
		{TaskID: "", N: 1, Kind: ledger.RecordEvent},
		{TaskID: "x", N: 0, Kind: ledger.RecordEvent},
	} {
		if err := s.Append(bg, []ledger.Record{r}); !errors.Is(err, ledger.ErrInvalid) {
			t.Fatalf("Append(%+v) = %v, want ErrInvalid", r, err)
		}
	}
	if _, err := s.Records(bg, "x"); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("a refused record was kept: %v", err)
	}
}

func closed(t *testing.T, f Factory) {
	s := f.Open(t)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	r := ledger.Record{TaskID: "x", N: 1, Kind: ledger.RecordEvent, Time: at}
	if err := s.Append(bg, []ledger.Record{r}); !errors.Is(err, ledger.ErrClosed) {
		t.Fatalf("Append after Close = %v, want ErrClosed", err)
	}
	if _, err := s.Tasks(bg); !errors.Is(err, ledger.ErrClosed) {
		t.Fatalf("Tasks after Close = %v, want ErrClosed", err)
	}
}

func volatile(t *testing.T, f Factory) {
	s := open(t, f)
	vs, ok := s.(ledger.VolatileStore)
	if !ok {
		t.Skip("not a VolatileStore")
	}
	recs := kinds("vol", at)[:3]
	if err := vs.AppendVolatile(bg, recs[:2]); err != nil {
		t.Fatal(err)
	}
	got, err := s.Records(bg, "vol")
	if err != nil {
		t.Fatal(err)
	}
	sameRecords(t, got, recs[:2])
	// A barrier carries the volatile records again: kept once.
	if err := s.Append(bg, recs); err != nil {
		t.Fatal(err)
	}
	s = reopen(t, f, s)
	got, err = s.Records(bg, "vol")
	if err != nil {
		t.Fatal(err)
	}
	sameRecords(t, got, recs)
}

// recovery runs a task through a Root on the store: one call of each fate,
// a child agent with its own records, and reads it back through Recover.
func recovery(t *testing.T, f Factory) {
	s := open(t, f)
	r, err := ledger.NewRoot(bg, ledger.Options{Store: s, Clock: clock.NewManual(at), TaskID: "task-recovery", RootAgentID: "root", InputDigest: "sha256:in", Fingerprint: "sha256:fp"})
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	allow := authority.Decision{Allowed: true, Layer: "policy", RuleID: "r"}
	ref, err := r.PutResult(bg, map[string]string{"note": "N-1"})
	must(err)
	must(r.AdmitToolCall(bg, "root", ledger.ToolCall{ID: "done", Name: "fs.read", Decision: allow}))
	must(r.Dispatch(bg, "root", "done"))
	must(r.SettleToolCall(bg, "root", "done", ledger.ToolSettlement{Status: outcome.ToolCompleted, Delivery: outcome.ResponseReceived, Result: ref}))
	child, err := r.StartAgent(bg, ledger.AgentSpec{ID: "child", ParentID: "root", Kind: "local_acp_temporary"})
	must(err)
	// A dispatch snapshot holding what a store that re-encodes JSON would
	// escape: it must read back byte for byte, or its digest fails.
	snap, digest, err := ledger.EncodeSnapshot(&ledger.Snapshot{Version: ledger.SnapshotVersion, Admitted: []ledger.SnapshotEntry{
		{ID: "tool:host.<&>", Kind: "tool", Attributes: map[string]string{"note": "a<b & c>d \u2028 \u00e9"}}}})
	must(err)
	must(r.RecordSnapshot(bg, child, snap, digest))
	must(r.AdmitToolCall(bg, child, ledger.ToolCall{ID: "sent", Name: "fs.write", Decision: allow}))
	must(r.Dispatch(bg, child, "sent"))
	must(r.AdmitToolCall(bg, "root", ledger.ToolCall{ID: "never", Name: "shell.run", Decision: allow}))
	must(r.Flush(bg))
	// The host dies here: the root is abandoned, its store reopened.
	s = reopen(t, f, s)
	rep, err := ledger.RecoverTask(bg, s, "task-recovery")
	must(err) // a closed store's leases are released
	names := func(cs []ledger.CallReport) (out []string) {
		for _, c := range cs {
			out = append(out, c.AgentID+"/"+c.CallID)
		}
		return out
	}
	if got := names(rep.Completed); !slices.Equal(got, []string{"root/done"}) {
		t.Fatalf("completed = %v", got)
	}
	if got := names(rep.Unknown); !slices.Equal(got, []string{"child/sent"}) {
		t.Fatalf("unknown = %v", got)
	}
	if got := names(rep.Retryable); !slices.Equal(got, []string{"root/never"}) {
		t.Fatalf("retryable = %v", got)
	}
	if len(rep.Agents) != 2 || rep.Agents[1].AgentID != "child" || rep.Agents[1].ParentID != "root" {
		t.Fatalf("agents = %+v", rep.Agents)
	}
	if rep.Outcome != nil {
		t.Fatalf("an interrupted task has an outcome: %+v", rep.Outcome)
	}
	if len(rep.Snapshots) != 1 || rep.Snapshots[0].AgentID != "child" || rep.Snapshots[0].Snapshot == nil || rep.Snapshots[0].Digest != digest {
		t.Fatalf("snapshots = %+v", rep.Snapshots)
	}
	if data, err := s.Result(bg, ref); err != nil || string(data) != `{"note":"N-1"}` {
		t.Fatalf("Result = %s, %v", data, err)
	}
}
