package pablo_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/children"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/model"
)

// spawnClock is a model whose root spawns one child and answers once it
// has the spawn's result; it records how long the child's first request
// came after the root proposed the spawn.
type spawnClock struct {
	mu      sync.Mutex
	spawned time.Time
	gaps    []time.Duration
}

func (m *spawnClock) Info() model.Info {
	return model.Info{Provider: "test", Model: "spawn-clock"}
}

func (m *spawnClock) Generate(_ context.Context, req *model.Request, emit func(string) error) (*model.Response, error) {
	if req.Messages[0].Content != fanInRoot {
		m.mu.Lock()
		m.gaps = append(m.gaps, time.Since(m.spawned))
		m.mu.Unlock()
		return &model.Response{Text: "ok", FinishReason: model.FinishStop}, emit("ok")
	}
	if len(req.Messages) > 1 {
		return &model.Response{Text: "done", FinishReason: model.FinishStop}, emit("done")
	}
	m.mu.Lock()
	m.spawned = time.Now()
	m.mu.Unlock()
	return &model.Response{FinishReason: model.FinishToolCalls, ToolCalls: []model.ToolCall{{ID: "s", Name: "subagent",
		Arguments: json.RawMessage(`{"action":"spawn","request":{"input":"child","capabilities":{"tools":[]}}}`)}}}, nil
}

// BenchmarkSpawnToFirstRequest: from the root model's spawn proposal to
// the child's first model request, in process (issue 16: p50 ≤ 1 ms).
func BenchmarkSpawnToFirstRequest(b *testing.B) {
	set, _ := authority.New(authority.Config{Native: []authority.ID{authority.Subagent}})
	m := &spawnClock{}
	rt, err := pablo.NewRuntime(pablo.RuntimeOptions{Model: m, Authority: set, Children: &children.Capacity{}})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		obj, err := rt.Run(context.Background(), fanInRoot)
		if err != nil || obj.Outcome.Status != event.StatusCompleted {
			b.Fatal(obj, err)
		}
	}
	slices.Sort(m.gaps)
	b.ReportMetric(float64(m.gaps[len(m.gaps)/2].Nanoseconds()), "p50-ns/spawn")
	b.ReportMetric(float64(m.gaps[len(m.gaps)*99/100].Nanoseconds()), "p99-ns/spawn")
}

// BenchmarkFanIn: the seed's fan-in (two readers, a synthesis) supervised
// in one tree, against the same three tasks run as independent root tasks
// in the same pattern (two at once, then one): the difference over three
// children is the cost of supervision per child.
func BenchmarkFanIn(b *testing.B) {
	set, _ := authority.New(authority.Config{Native: []authority.ID{authority.Subagent}})
	b.Run("Supervised", func(b *testing.B) {
		rt, _ := pablo.NewRuntime(pablo.RuntimeOptions{Model: &fanInModel{}, Authority: set, Children: &children.Capacity{}})
		for b.Loop() {
			if obj, _ := rt.Run(context.Background(), fanInRoot); obj.Outcome.Status != event.StatusCompleted {
				b.Fatal(obj.Outcome)
			}
		}
	})
	b.Run("Independent", func(b *testing.B) {
		rt, _ := pablo.NewRuntime(pablo.RuntimeOptions{Model: &fanInModel{}, Authority: set})
		for b.Loop() {
			var wg sync.WaitGroup
			for _, in := range []string{"report A", "report B"} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rt.Run(context.Background(), in)
				}()
			}
			wg.Wait()
			rt.Run(context.Background(), "synthesis")
			rt.Run(context.Background(), "root turn") // the root's own task, without children
		}
	})
}
