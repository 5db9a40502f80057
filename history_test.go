package pablo

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"
)

// TestTurnCostDoesNotWalkTheHistory: a task of many turns measures every
// model request from the running measure of its history, never by walking
// it, and the measure is the one a walk gives.
func TestTurnCostDoesNotWalkTheHistory(t *testing.T) {
	t.Parallel()
	const turns = 200
	var sizes []uint64
	m := &measuringModel{Model: NewScriptModel(mustScript(t, toolCallScript(turns))), measure: func(req *ModelRequest) {
		sizes = append(sizes, requestBytes(req))
	}}
	rt := benchRuntimeStore(t, nil, toolCallScript(turns), noopTool{})
	rt.opts.Model = m
	task, err := rt.Start(context.Background(), "go")
	if err != nil {
		t.Fatal(err)
	}
	if obj := task.Wait(); obj.Outcome.Status != StatusCompleted {
		t.Fatalf("outcome %+v", obj.Outcome)
	}
	if task.historyWalks != 0 {
		t.Errorf("%d model requests of %d walked the history to be measured", task.historyWalks, turns+1)
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
	resp, err := m.Generate(context.Background(), &ModelRequest{turn: 3}, func(string) error { return nil })
	if err != nil || resp.Text != "three" {
		t.Fatalf("got %+v, %v", resp, err)
	}
	// A request a host built itself is still counted.
	resp, err = m.Generate(context.Background(), &ModelRequest{Messages: []Message{{Role: RoleUser}, {Role: RoleAssistant}}}, func(string) error { return nil })
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
	Model
	measure func(*ModelRequest)
}

func (m *measuringModel) Generate(ctx context.Context, req *ModelRequest, emit func(string) error) (*ModelResponse, error) {
	m.measure(req)
	return m.Model.Generate(ctx, req, emit)
}

// turnClockModel records when each model turn starts.
type turnClockModel struct {
	Model
	at []time.Time
}

func (m *turnClockModel) Generate(ctx context.Context, req *ModelRequest, emit func(string) error) (*ModelResponse, error) {
	m.at = append(m.at, time.Now())
	return m.Model.Generate(ctx, req, emit)
}

// BenchmarkLongTask runs tasks of 10, 100, 1,000 and 10,000 turns, one tool
// call each, and reports the µs per turn of each tenth of the task (d01 the
// first, d10 the last) and the ratio of the last to the first. A turn costs
// the same at the end of a long task as at its start.
func BenchmarkLongTask(b *testing.B) {
	for _, turns := range []int{10, 100, 1000, 10000} {
		b.Run(fmt.Sprint(turns, "-turns"), func(b *testing.B) {
			script := toolCallScript(turns)
			m := &turnClockModel{Model: NewScriptModel(mustScript(b, script)), at: make([]time.Time, 0, turns+2)}
			rt := benchRuntimeStore(b, nil, script, noopTool{})
			rt.opts.Model = m
			deciles := make([]time.Duration, 10)
			runtime.GC()
			for b.Loop() {
				m.at = m.at[:0]
				if obj, _ := rt.Run(context.Background(), "go"); obj.Outcome.Status != StatusCompleted {
					b.Fatal(obj.Outcome.Status)
				}
				m.at = append(m.at, time.Now())
				for d := range deciles {
					deciles[d] += m.at[(d+1)*turns/10].Sub(m.at[d*turns/10])
				}
			}
			per := float64(b.N) * float64(turns) / 10
			for d, sum := range deciles {
				b.ReportMetric(float64(sum.Microseconds())/per, fmt.Sprintf("d%02d-µs/turn", d+1))
			}
			b.ReportMetric(float64(deciles[9])/float64(deciles[0]), "last/first")
		})
	}
}
