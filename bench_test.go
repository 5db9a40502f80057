package pablo

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/ledger/outcome"
	"github.com/pabloagent/pablo/model"
	"github.com/pabloagent/pablo/tracefile"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/ledger"
)

// noopTool is a host tool that does no I/O, so benchmarks measure only the
// governance path around it.
type noopTool struct{}

func (noopTool) Tools() []authority.ToolSpec {
	return []authority.ToolSpec{{ID: "bench.noop", Description: "no-op",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`)}}
}

func (noopTool) Call(context.Context, authority.Call) ledger.ToolResult {
	return ledger.ToolResult{Status: outcome.ToolCompleted}
}

func benchRuntime(b testing.TB, script string, cats ...ToolCatalog) *Runtime {
	return benchRuntimeStore(b, nil, script, cats...)
}

func benchRuntimeStore(b testing.TB, store ledger.Store, script string, cats ...ToolCatalog) *Runtime {
	b.Helper()
	s, err := ParseScript([]byte(script))
	if err != nil {
		b.Fatal(err)
	}
	set, _ := authority.New(authority.Config{Native: []authority.ID{authority.FSRead}, Host: []authority.ID{"bench.noop"}})
	rt, err := NewRuntime(RuntimeOptions{Model: NewScriptModel(s), Authority: set, Catalogs: cats, Store: store, Sink: func(event.Event) error { return nil }})
	if err != nil {
		b.Fatal(err)
	}
	return rt
}

func deltas(n int, text string) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = strconv.Quote(text)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// BenchmarkEventToSink measures one streamed text delta from the model to
// the host sink: ledger append (root_seq, seq, ceiling), publication to
// readers and the inline sink. Reported per event.
func BenchmarkEventToSink(b *testing.B) {
	const n = 10000
	rt := benchRuntime(b, `{"turns":[{"text":`+deltas(n, "0123456789abcdef")+`}]}`)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if obj, _ := rt.Run(context.Background(), "go"); obj.Outcome.Status != event.StatusCompleted {
			b.Fatal(obj.Outcome.Status)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/event")
}

// stampModel streams n chunks and stamps the time just before yielding
// each one, as the reference's event-latency fixture does.
type stampModel struct {
	n     int
	chunk string
	stamp *time.Time
}

func (m stampModel) Info() model.Info { return model.Info{Provider: "bench", Model: "stamp"} }
func (m stampModel) Generate(_ context.Context, _ *model.Request, emit func(string) error) (*model.Response, error) {
	for range m.n {
		*m.stamp = time.Now()
		if err := emit(m.chunk); err != nil {
			return nil, err
		}
	}
	return &model.Response{Text: "done", FinishReason: model.FinishStop}, nil
}

// BenchmarkEventLatency is the reference's event-latency method (REFERENCE
// §6.1): an in-process provider stamps each text event just before yielding
// it, the inline sink records the elapsed time when the event arrives; 1,000
// chunks of 32 bytes per run. It reports the nearest-rank p50 and p99 over
// every sample of the benchmark, and the p50 of the instrument alone.
func BenchmarkEventLatency(b *testing.B) {
	const chunks = 1000
	var stamp time.Time
	samples := make([]time.Duration, 0, 64*chunks)
	sink := func(e event.Event) error {
		// The clock first, on arrival; then what the event is.
		d := time.Since(stamp)
		if e.Type == event.TextDelta {
			samples = append(samples, d)
		}
		return nil
	}
	set, _ := authority.New(authority.Config{})
	rt, err := NewRuntime(RuntimeOptions{Model: stampModel{n: chunks, chunk: strings.Repeat("x", 32), stamp: &stamp}, Authority: set, Sink: sink})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if obj, _ := rt.Run(context.Background(), "go"); obj.Outcome.Status != event.StatusCompleted {
			b.Fatal(obj.Outcome.Status)
		}
	}
	slices.Sort(samples)
	rank := func(p float64) float64 {
		return float64(samples[int(math.Ceil(p*float64(len(samples))))-1].Nanoseconds())
	}
	b.ReportMetric(rank(0.50), "p50-ns/event")
	b.ReportMetric(rank(0.99), "p99-ns/event")
	// The instrument's own share: a stamp read back at once, nothing
	// between. Go's clock reads cost more of it than a native Instant does.
	samples = samples[:0]
	for range 100_000 {
		stamp = time.Now()
		samples = append(samples, time.Since(stamp))
	}
	slices.Sort(samples)
	b.ReportMetric(rank(0.50), "instrument-p50-ns")
}

// BenchmarkRun1000Events is the no-trace run of the reference's
// trace-overhead method: a whole task of 1,000 events from an in-process
// model (996 text deltas of 16 bytes, where the reference streams 1,000 of
// 32), the same task as BenchmarkRun1000EventsTraced/no-trace.
func BenchmarkRun1000Events(b *testing.B) {
	rt := benchRuntime(b, `{"turns":[{"text":`+deltas(996, "0123456789abcdef")+`}]}`)
	b.ReportAllocs()
	for b.Loop() {
		rt.Run(context.Background(), "go")
	}
}

// BenchmarkRun1000EventsTraced is the reference's trace-overhead method:
// the 1,000-event task with and without a native JSONL trace of metadata
// only (content not captured), flushes included, the file's creation and
// its final sync not. Compare the two sub-benchmarks.
func BenchmarkRun1000EventsTraced(b *testing.B) {
	s, err := ParseScript([]byte(`{"turns":[{"text":` + deltas(996, "0123456789abcdef") + `}]}`))
	if err != nil {
		b.Fatal(err)
	}
	set, _ := authority.New(authority.Config{})
	for _, traced := range []bool{false, true} {
		b.Run(map[bool]string{false: "no-trace", true: "metadata-jsonl"}[traced], func(b *testing.B) {
			dir := b.TempDir()
			var tw *tracefile.Writer
			sink := func(ev event.Event) error {
				if tw == nil {
					return nil
				}
				return tw.Write(ev)
			}
			rt, err := NewRuntime(RuntimeOptions{Model: NewScriptModel(s), Authority: set, Sink: sink})
			if err != nil {
				b.Fatal(err)
			}
			var written int64
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if traced {
					b.StopTimer()
					if tw, err = OpenTrace(filepath.Join(dir, fmt.Sprint(i, ".jsonl")), tracefile.Options{}); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				if obj, _ := rt.Run(context.Background(), "go"); obj.Outcome.Status != event.StatusCompleted {
					b.Fatal(obj.Outcome.Status)
				}
				if traced {
					b.StopTimer()
					written += tw.Written()
					tw.Close()
					os.Remove(filepath.Join(dir, fmt.Sprint(i, ".jsonl")))
					b.StartTimer()
				}
			}
			if traced {
				b.ReportMetric(float64(written)/float64(b.N), "trace-bytes/op")
			}
		})
	}
}

// BenchmarkCoreRun is the engine's part of a core run: two model calls
// from an in-process scripted model and one fs.read, the second answer
// streamed as 32 deltas of 16 bytes. It is not the reference's core run,
// which streams from a loopback provider and runs a real printf:
// BenchmarkReferenceCoreRun is.
func BenchmarkCoreRun(b *testing.B) {
	dir := b.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte(strings.Repeat("evidence line\n", 64)), 0o600)
	d := benchDeployment(b, dir, `{"turns":[{"text":["x"],"tool_calls":[{"name":"fs_read","arguments":{"path":"a.txt"}}]},{"text":`+deltas(32, "0123456789abcdef")+`}]}`)
	rt, err := d.NewRuntime(context.Background(), HostOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	b.ReportAllocs()
	for b.Loop() {
		if obj, _ := rt.Run(context.Background(), "go"); obj.Outcome.Status != event.StatusCompleted {
			b.Fatal(obj.Outcome.Status)
		}
	}
}

func benchDeployment(b *testing.B, ws, script string) *Deployment {
	return scriptDeployment(b, b.TempDir(), ws, script, "[options.shell]\nenabled = false\n")
}

// BenchmarkGovernancePath measures what the engine adds around one native
// tool call that does no I/O: name mapping, authority decision, contract
// check, ledger admission, dispatch and settlement, result retention and the
// two lifecycle events. Reported per tool call, for a task whose ledger is
// private (no store: only results are kept) and for one that writes every
// record to a MemoryStore (what a durable store is handed, minus its I/O).
func BenchmarkGovernancePath(b *testing.B) {
	const calls = 200
	var tc []string
	for i := 0; i < calls; i++ {
		tc = append(tc, fmt.Sprintf(`{"id":"c%d","name":"bench_noop","arguments":{"path":"a.txt"}}`, i))
	}
	script := `{"turns":[{"text":["x"],"tool_calls":[` + strings.Join(tc, ",") + `]},{"text":["done"]}]}`
	for _, store := range []string{"private", "memory-store"} {
		b.Run(store, func(b *testing.B) {
			var st ledger.Store
			if store == "memory-store" {
				st = ledger.NewMemoryStore()
			}
			rt := benchRuntimeStore(b, st, script, noopTool{})
			b.ReportAllocs()
			for b.Loop() {
				if obj, _ := rt.Run(context.Background(), "go"); obj.Outcome.Status != event.StatusCompleted {
					b.Fatal(obj.Outcome.Status)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/calls, "ns/toolcall")
			b.ReportMetric(float64(testing.AllocsPerRun(1, func() { rt.Run(context.Background(), "go") }))/calls, "allocs/toolcall")
		})
	}
}

// blockingModel parks every task in its first model call until released.
type blockingModel struct{ release chan struct{} }

func (m blockingModel) Info() model.Info { return model.Info{Provider: "bench", Model: "blocking"} }
func (m blockingModel) Generate(ctx context.Context, _ *model.Request, _ func(string) error) (*model.Response, error) {
	select {
	case <-m.release:
		return &model.Response{Text: "ok", FinishReason: model.FinishStop}, nil
	case <-ctx.Done():
		return nil, &model.Error{Code: outcome.FailProviderTransport, Delivery: outcome.MayHaveBeenSent, Err: ctx.Err()}
	}
}

// benchTasks100k adds the 100,000-task run to BenchmarkConcurrentTasks
// (about 2 GiB of heap).
var benchTasks100k = flag.Bool("pablo.tasks100k", false, "BenchmarkConcurrentTasks also parks 100,000 tasks")

// BenchmarkConcurrentTasks starts 1,000 and 10,000 root tasks (100,000 with
// -pablo.tasks100k) in one runtime of the demo deployment (the native fs
// tools, an active Skill, its limits), all parked in a model call, and
// reports the heap and stack each idle task holds.
func BenchmarkConcurrentTasks(b *testing.B) {
	sizes := []int{1000, 10000}
	if *benchTasks100k {
		sizes = append(sizes, 100000)
	}
	demo := filepath.Join("examples", "pablo", "demo")
	d, err := Load(LoadOptions{Config: filepath.Join(demo, "deployment.toml"), Bindings: map[string]string{
		"workspace": filepath.Join(demo, "work"), "skills": filepath.Join(demo, "skills")}})
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range sizes {
		b.Run(fmt.Sprint(n, "-tasks"), func(b *testing.B) {
			for b.Loop() {
				m := blockingModel{release: make(chan struct{})}
				rt, err := d.NewRuntime(context.Background(), HostOptions{Model: m})
				if err != nil {
					b.Fatal(err)
				}
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				tasks := make([]*Task, n)
				for i := range tasks {
					t, err := rt.Start(context.Background(), "go")
					if err != nil {
						b.Fatal(err)
					}
					tasks[i] = t
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				b.ReportMetric(float64(after.HeapInuse+after.StackInuse-before.HeapInuse-before.StackInuse)/float64(n), "bytes/idle-task")
				b.ReportMetric(float64(after.HeapInuse-before.HeapInuse)/float64(n), "heap-bytes/idle-task")
				close(m.release)
				for _, t := range tasks {
					if obj := t.Wait(); obj.Outcome.Status != event.StatusCompleted {
						b.Fatal(obj.Outcome.Status, obj.Outcome.Code)
					}
				}
				rt.Close()
			}
		})
	}
}

func ledgerLimitsWithDuration(ms uint64) ledger.Limits {
	return ledger.Limits{DurationMillis: ledger.Max(ms)}
}
