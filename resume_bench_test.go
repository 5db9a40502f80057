package pablo

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/ledger/outcome"
	"github.com/pabloagent/pablo/model"
)

// echoTool returns a result of a fixed size: the bulk of a long task's
// history.
type echoTool struct{ text string }

func (echoTool) Tools() []authority.ToolSpec {
	return []authority.ToolSpec{{ID: "bench.echo", Description: "echo",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}`)}}
}

func (e echoTool) Call(context.Context, authority.Call) ledger.ToolResult {
	return ledger.Completed(map[string]any{"text": e.text})
}

// echoModel calls bench.echo for turns turns, then answers.
type echoModel struct {
	turns int
	n     atomic.Int32
}

func (*echoModel) Info() model.Info { return model.Info{Provider: "bench", Model: "echo"} }

func (m *echoModel) Generate(_ context.Context, req *model.Request, _ func(string) error) (*model.Response, error) {
	i := int(m.n.Add(1))
	if i > m.turns {
		return &model.Response{Text: "done", FinishReason: model.FinishStop}, nil
	}
	return &model.Response{FinishReason: model.FinishToolCalls, ToolCalls: []model.ToolCall{{ID: fmt.Sprintf("c%d", i), Name: "bench_echo", Arguments: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}}}, nil
}

// BenchmarkResume times Runtime.Resume of a task whose host stopped as its
// last model call left, after turns turns of one tool call each with a
// result of size bytes: taking the task over, rebuilding its ledger and its
// history from the bbolt store, settling the call in flight, the one
// model call sent again and the terminal record. ns/turn staying flat as
// turns grow is the absence of a quadratic step in the task's length; the
// 200-turn task is also run with results up to 64 KiB, its history from
// 64 KB to 13 MB, where ns/history_byte falling as the history grows is
// its absence in the history's size.
func BenchmarkResume(b *testing.B) {
	for _, turns := range []int{50, 100, 200, 400} {
		sizes := []int{256, 4096}
		if turns == 200 {
			sizes = append(sizes, 16384, 65536)
		}
		for _, size := range sizes {
			b.Run(fmt.Sprintf("turns=%d/result=%dB", turns, size), func(b *testing.B) { benchResume(b, turns, size) })
		}
	}
}

func benchResume(b *testing.B, turns, size int) {
	dir := b.TempDir()
	orig := filepath.Join(dir, "stopped.db")
	set, _ := authority.New(authority.Config{Host: []authority.ID{"bench.echo"}})
	tool := echoTool{text: strings.Repeat("x", size)}
	opts := RuntimeOptions{Authority: set, Catalogs: []ToolCatalog{tool}}
	id, history := stoppedTask(b, orig, opts, turns)
	var total time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		path := filepath.Join(dir, fmt.Sprintf("resume-%d.db", i))
		copyFile(b, orig, path)
		store, err := ledger.OpenBolt(path, ledger.BoltOptions{})
		if err != nil {
			b.Fatal(err)
		}
		o := opts
		o.Model, o.Store = &echoModel{turns: 0}, store
		rt, err := NewRuntime(o)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		task, err := rt.Resume(context.Background(), id)
		if err != nil {
			b.Fatal(err)
		}
		obj := task.Wait()
		total += time.Since(start)
		b.StopTimer()
		if obj.Outcome.Status != "completed" || obj.Resume.ResentModelCalls != 1 || len(obj.Resume.Completed) != turns {
			b.Fatalf("outcome %+v, resume %+v", obj.Outcome, obj.Resume)
		}
		rt.Close()
		store.Close()
		os.Remove(path)
		b.StartTimer()
	}
	b.ReportMetric(float64(total.Nanoseconds())/float64(b.N)/float64(turns), "ns/turn")
	b.ReportMetric(float64(total.Nanoseconds())/float64(b.N)/float64(history), "ns/history_byte")
	b.ReportMetric(float64(history), "history_bytes")
}

// stoppedTask leaves in the bbolt file path a task of turns turns whose
// host stopped as its last model call left, and returns its ID and the
// bytes of the tool results its history holds.
func stoppedTask(b *testing.B, path string, opts RuntimeOptions, turns int) (string, int) {
	b.Helper()
	bolt, err := ledger.OpenBolt(path, ledger.BoltOptions{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer bolt.Close()
	var models atomic.Int32
	ds := &dyingStore{Store: bolt, kill: killAt(true, func(c *ledger.CallRecord) bool {
		return c.Kind == ledger.ModelCallKind && c.State == ledger.CallDispatched && int(models.Add(1)) == turns+1
	})}
	o := opts
	o.Model, o.Store = &echoModel{turns: turns}, ds
	rt, err := NewRuntime(o)
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	task, err := rt.Start(context.Background(), "echo")
	if err != nil {
		b.Fatal(err)
	}
	task.Wait()
	rep, err := ledger.RecoverTask(context.Background(), bolt, task.ID())
	if err != nil || rep.Outcome != nil || len(rep.Completed) != 2*turns {
		b.Fatalf("the stopped task: %v, %d completed calls, outcome %v", err, len(rep.Completed), rep.Outcome)
	}
	history := 0
	for _, c := range rep.Completed {
		if c.Kind == ledger.ToolCallKind && c.Status == string(outcome.ToolCompleted) {
			data, _ := bolt.Result(context.Background(), c.Result)
			history += len(data)
		}
	}
	return task.ID(), history
}

func copyFile(b *testing.B, from, to string) {
	src, err := os.Open(from)
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	dst, err := os.Create(to)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		b.Fatal(err)
	}
	dst.Close()
}
