package pablo

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/internal/engine"
	"github.com/pabloagent/pablo/model"
)

// TestTurnCostDoesNotWalkTheHistory: a task of many turns measures every
// model request from the running measure of its history, never by walking
// it, and the measure is the one a walk gives.
func TestTurnCostDoesNotWalkTheHistory(t *testing.T) {
	t.Parallel()
	const turns = 200
	var sizes []uint64
	m := &measuringModel{Model: NewScriptModel(mustScript(t, toolCallScript(turns))), measure: func(req *model.Request) {
		sizes = append(sizes, engine.RequestBytes(req))
	}}
	rt := benchRuntimeStore(t, nil, toolCallScript(turns), noopTool{})
	rt.opts.Model = m
	reopen(t, rt)
	task, err := rt.Start(context.Background(), "go")
	if err != nil {
		t.Fatal(err)
	}
	if obj := task.Wait(); obj.Outcome.Status != event.StatusCompleted {
		t.Fatalf("outcome %+v", obj.Outcome)
	}
	if task.t.HistoryWalks() != 0 {
		t.Errorf("%d model requests of %d walked the history to be measured", task.t.HistoryWalks(), turns+1)
	}
	if len(sizes) != turns+1 || sizes[turns] <= sizes[0] {
		t.Fatalf("measured %d requests, %v", len(sizes), sizes)
	}
}

// TestScriptModelTakesTheTurnFromTheLoop: the script model reads which turn
// it is from the request the loop built, not by counting its messages.
func TestScriptModelTakesTheTurnFromTheLoop(t *testing.T) {
	t.Parallel()
	m := NewScriptModel(mustScript(t, `{"turns":[{"text":["one"]},{"text":["two"]},{"text":["three"]}]}`))
	req := &model.Request{}
	model.SetTurn(req, 3)
	resp, err := m.Generate(context.Background(), req, func(string) error { return nil })
	if err != nil || resp.Text != "three" {
		t.Fatalf("got %+v, %v", resp, err)
	}
	// A request a host built itself is still counted.
	resp, err = m.Generate(context.Background(), &model.Request{Messages: []model.Message{{Role: model.RoleUser}, {Role: model.RoleAssistant}}}, func(string) error { return nil })
	if err != nil || resp.Text != "two" {
		t.Fatalf("got %+v, %v", resp, err)
	}
}

func mustScript(t testing.TB, text string) *Script {
	t.Helper()
	s, err := ParseScript([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// measuringModel hands each request to measure before the model sees it.
type measuringModel struct {
	model.Model
	measure func(*model.Request)
}

func (m *measuringModel) Generate(ctx context.Context, req *model.Request, emit func(string) error) (*model.Response, error) {
	m.measure(req)
	return m.Model.Generate(ctx, req, emit)
}

// turnClockModel records when each model turn starts and, if memEvery is
// set, the heap allocations (bytes and objects) made so far at every
// memEvery-th turn.
type turnClockModel struct {
	model.Model
	at          []time.Time
	memEvery    int
	bytes, objs []uint64
}

func (m *turnClockModel) Generate(ctx context.Context, req *model.Request, emit func(string) error) (*model.Response, error) {
	if m.memEvery > 0 && model.Turn(req)%m.memEvery == 1 {
		m.readMem()
	}
	m.at = append(m.at, time.Now())
	return m.Model.Generate(ctx, req, emit)
}

func (m *turnClockModel) readMem() {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m.bytes = append(m.bytes, ms.TotalAlloc)
	m.objs = append(m.objs, ms.Mallocs)
}

// decileAllocs runs a task of turns turns (one tool call each, turns a
// multiple of 10) and returns the bytes and objects allocated per turn in
// each tenth of it, counted from runtime.MemStats at the tenths' bounds.
func decileAllocs(tb testing.TB, turns int) (bytes, objs [10]float64) {
	tb.Helper()
	script := toolCallScript(turns)
	m := &turnClockModel{Model: NewScriptModel(mustScript(tb, script)), memEvery: turns / 10}
	rt := benchRuntimeStore(tb, nil, script, noopTool{})
	rt.opts.Model = m
	reopen(tb, rt)
	if obj, _ := rt.Run(context.Background(), "go"); obj.Outcome.Status != event.StatusCompleted {
		tb.Fatal(obj.Outcome.Status)
	}
	if len(m.bytes) != 11 { // the last bound is the answering turn
		tb.Fatalf("%d memory readings for %d turns", len(m.bytes), turns)
	}
	per := float64(turns / 10)
	for d := range 10 {
		bytes[d] = float64(m.bytes[d+1]-m.bytes[d]) / per
		objs[d] = float64(m.objs[d+1]-m.objs[d]) / per
	}
	return bytes, objs
}

// TestTurnAllocationsDoNotGrowWithHistory: over a task of 2,000 turns (one
// tool call each) a turn of the last tenth allocates no more objects than
// one of the first, within 20%: no per-turn work copies or re-encodes the
// history. Bytes are held to 2x: the task's append-only slices (history,
// event log, records) grow by amortized copies whose lumps fall unevenly
// over the tenths.
func TestTurnAllocationsDoNotGrowWithHistory(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's own allocations would be counted")
	}
	bytes, objs := decileAllocs(t, 2000)
	// The first tenth also carries the task's start; compare with its
	// least costly neighbour so that a start made cheaper cannot hide growth.
	first := min(objs[0], objs[1])
	if objs[9] > 1.2*first {
		t.Errorf("objects allocated per turn: %.1f in the last tenth, %.1f in the first (by tenth %v)", objs[9], first, objs)
	}
	if firstB := min(bytes[0], bytes[1]); bytes[9] > 2*firstB {
		t.Errorf("bytes allocated per turn: %.0f in the last tenth, %.0f in the first (by tenth %v)", bytes[9], firstB, bytes)
	}
}

// BenchmarkLongTask runs tasks of 10, 100, 1,000 and 10,000 turns, one tool
// call each, and reports the µs per turn of each tenth of the task (d01 the
// first, d10 the last), each the median over the b.N tasks run, and
// last/first, the ratio of those medians. A turn costs the same at the end
// of a long task as at its start. One more task, untimed, reports the
// objects and bytes allocated per turn of the first and the last tenth.
func BenchmarkLongTask(b *testing.B) {
	for _, turns := range []int{10, 100, 1000, 10000} {
		b.Run(fmt.Sprint(turns, "-turns"), func(b *testing.B) {
			script := toolCallScript(turns)
			m := &turnClockModel{Model: NewScriptModel(mustScript(b, script)), at: make([]time.Time, 0, turns+2)}
			rt := benchRuntimeStore(b, nil, script, noopTool{})
			rt.opts.Model = m
			reopen(b, rt)
			var deciles [10][]time.Duration // per tenth, one sample a task
			runtime.GC()
			for b.Loop() {
				m.at = m.at[:0]
				if obj, _ := rt.Run(context.Background(), "go"); obj.Outcome.Status != event.StatusCompleted {
					b.Fatal(obj.Outcome.Status)
				}
				m.at = append(m.at, time.Now())
				for d := range deciles {
					deciles[d] = append(deciles[d], m.at[(d+1)*turns/10].Sub(m.at[d*turns/10]))
				}
			}
			b.StopTimer()
			per := float64(turns) / 10
			var med [10]float64
			for d := range deciles {
				slices.Sort(deciles[d])
				med[d] = float64(deciles[d][len(deciles[d])/2].Nanoseconds()) / 1e3 / per
				b.ReportMetric(med[d], fmt.Sprintf("d%02d-µs/turn", d+1))
			}
			b.ReportMetric(med[9]/med[0], "last/first")
			if turns >= 100 {
				bytes, objs := decileAllocs(b, turns)
				b.ReportMetric(objs[0], "d01-allocs/turn")
				b.ReportMetric(objs[9], "d10-allocs/turn")
				b.ReportMetric(bytes[0], "d01-B/turn")
				b.ReportMetric(bytes[9], "d10-B/turn")
			}
		})
	}
}
