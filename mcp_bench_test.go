package pablo

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/mcp"
)

// BenchmarkMCPToolCallAsATask measures an MCP tool call as a task makes it
// (the authority's decision, the contract check, the ledger's admission and
// settlement records, the lifecycle events, the catalog's call) against a
// raw mark3labs/mcp-go client's call to the same stdio server: the fault
// server of examples/mcpservers, unconfined, one process for each arm.
//
// A round is one task whose one turn makes 50 tool calls (the task's start,
// its two model turns and its settlement spread over them), the same
// number of raw calls, and the same number of Catalog.Call calls alone (no
// decision, contract, ledger or events: what the governance costs beyond
// the catalog), and a task without a tool call, its time divided by 50 (the
// task's own part of each governed call). The four alternate, their order flipping every round, so
// all see the same machine. It reports the median per call of each arm
// over the rounds and governed/raw (target: ≤ 1.05).
func BenchmarkMCPToolCallAsATask(b *testing.B) {
	const calls = 50
	bin := filepath.Join(b.TempDir(), "fault")
	if out, err := exec.Command("go", "build", "-o", bin, "./examples/mcpservers/fault").CombinedOutput(); err != nil {
		b.Fatalf("build fault server: %v\n%s", err, out)
	}
	srv := mcp.Server{Name: "bench", Transport: mcp.Stdio, Command: bin, Args: []string{"-mode", "ok"}, Required: true,
		StartupTimeout: 5 * time.Second, OperationTimeout: 5 * time.Second, Sandbox: mcp.Sandbox{Mode: "off"}}
	set, err := authority.New(authority.Config{MCPServers: map[string]authority.MCPServer{"bench": {Launcher: bin}}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	cat, err := mcp.Open(ctx, mcp.Options{Servers: []mcp.Server{srv}, Authority: set})
	if err != nil {
		b.Fatal(err)
	}
	defer cat.Close()

	alias := mcp.Alias(authority.MCPTool("bench", "echo"))
	var tc []string
	for i := range calls {
		tc = append(tc, fmt.Sprintf(`{"id":"c%d","name":%q,"arguments":{"message":"hello"}}`, i, alias))
	}
	script := `{"turns":[{"text":["x"],"tool_calls":[` + strings.Join(tc, ",") + `]},{"text":["done"]}]}`
	s, err := ParseScript([]byte(script))
	if err != nil {
		b.Fatal(err)
	}
	rt, err := NewRuntime(RuntimeOptions{Model: NewScriptModel(s), Authority: set, Catalogs: []ToolCatalog{cat}, Sink: func(event.Event) error { return nil }})
	if err != nil {
		b.Fatal(err)
	}

	cl, err := mcpclient.NewStdioMCPClient(bin, nil, "-mode", "ok")
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	init := mcpgo.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.ProtocolVersion
	init.Params.ClientInfo = mcpgo.Implementation{Name: "bench", Version: "1"}
	if _, err := cl.Initialize(ctx, init); err != nil {
		b.Fatal(err)
	}
	req := mcpgo.CallToolRequest{}
	req.Params.Name = "echo"
	req.Params.Arguments = map[string]any{"message": "hello"}
	req.Params.Meta = &mcpgo.Meta{ProgressToken: 1}

	var governed, raw []time.Duration
	g := func() {
		t0 := time.Now()
		obj, _ := rt.Run(ctx, "go")
		d := time.Since(t0)
		if obj.Outcome.Status != event.StatusCompleted || obj.Accounting.ToolCalls.N != calls {
			b.Fatalf("outcome %+v, %d tool calls", obj.Outcome, obj.Accounting.ToolCalls.N)
		}
		governed = append(governed, d/calls)
	}
	r := func() {
		t0 := time.Now()
		for range calls {
			if res, err := cl.CallTool(ctx, req); err != nil || res.IsError {
				b.Fatal(err)
			}
		}
		raw = append(raw, time.Since(t0)/calls)
	}
	// The task's own part: a task with no tool call (its start, one
	// scripted answer, its settlement), spread over as many calls.
	s0, err := ParseScript([]byte(`{"turns":[{"text":["done"]}]}`))
	if err != nil {
		b.Fatal(err)
	}
	rt0, err := NewRuntime(RuntimeOptions{Model: NewScriptModel(s0), Authority: set, Catalogs: []ToolCatalog{cat}, Sink: func(event.Event) error { return nil }})
	if err != nil {
		b.Fatal(err)
	}
	var empty []time.Duration
	e := func() {
		t0 := time.Now()
		obj, _ := rt0.Run(ctx, "go")
		d := time.Since(t0)
		if obj.Outcome.Status != event.StatusCompleted {
			b.Fatalf("outcome %+v", obj.Outcome)
		}
		empty = append(empty, d/calls)
	}
	var direct []time.Duration
	dc := authority.Call{ID: "x", Tool: authority.MCPTool("bench", "echo"), Arguments: []byte(`{"message":"hello"}`)}
	c := func() {
		cctx, cancel := context.WithCancel(ctx)
		t0 := time.Now()
		for range calls {
			if r := cat.Call(cctx, dc); r.Status != "completed" {
				b.Fatal(r)
			}
		}
		direct = append(direct, time.Since(t0)/calls)
		cancel()
	}
	g()
	r()
	governed, raw = governed[:0], raw[:0]
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			g()
			r()
			c()
			e()
		} else {
			e()
			c()
			r()
			g()
		}
	}
	b.StopTimer()
	med := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2].Nanoseconds())
	}
	gm, rm := med(governed), med(raw)
	b.ReportMetric(gm, "governed-ns/call")
	b.ReportMetric(rm, "raw-ns/call")
	b.ReportMetric(gm/rm, "governed/raw")
	b.ReportMetric(med(direct), "catalog-ns/call")
	b.ReportMetric(med(empty), "task-ns/call")
}
