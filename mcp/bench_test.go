package mcp

import (
	"context"
	"encoding/json"
	"os/exec"
	"slices"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/internal/proc"
)

// benchCall is the governed call every benchmark makes.
func benchCall() authority.Call {
	return authority.Call{ID: "1", Tool: "mcp/bench/echo", Arguments: json.RawMessage(`{"message":"hello"}`)}
}

// rawRequest initializes a raw mcp-go client and returns the request that
// matches benchCall. The governed call asks for progress with a token; the
// raw call asks the same, so both arms send the same request and only
// governance differs.
func rawRequest(b *testing.B, cl *mcpclient.Client) mcpgo.CallToolRequest {
	b.Helper()
	init := mcpgo.InitializeRequest{}
	init.Params.ProtocolVersion = ProtocolVersion
	init.Params.ClientInfo = mcpgo.Implementation{Name: "bench", Version: "1"}
	if _, err := cl.Initialize(context.Background(), init); err != nil {
		b.Fatal(err)
	}
	req := mcpgo.CallToolRequest{}
	req.Params.Name = "echo"
	req.Params.Arguments = map[string]any{"message": "hello"}
	req.Params.Meta = &mcpgo.Meta{ProgressToken: 1}
	return req
}

// rawStdioClient is a raw mcp-go client that launches srv itself.
func rawStdioClient(b *testing.B, srv Server) *mcpclient.Client {
	b.Helper()
	cl, err := mcpclient.NewStdioMCPClient(srv.Command, nil, srv.Args...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cl.Close() })
	return cl
}

// BenchmarkStdioToolCall compares one tools/call through Catalog.Call alone
// (argument validation, per-server lock, result parsing, redaction,
// ToolResult mapping) with a raw mcp-go client call to the same stdio
// server. It skips the task's governance (decision, contract check, ledger
// records, events): the root's BenchmarkMCPToolCallAsATask measures the
// call as a task makes it. Compare the two arms with benchstat.
func BenchmarkStdioToolCall(b *testing.B) {
	srv := faultStdio(b, "bench", "ok")
	ctx := context.Background()
	b.Run("governed", func(b *testing.B) {
		c := open(b, Options{Servers: []Server{srv}, Authority: allowAll(b, srv)})
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			if r := c.Call(ctx, benchCall()); r.Status != "completed" {
				b.Fatalf("%+v", r)
			}
		}
	})
	b.Run("raw", func(b *testing.B) {
		cl := rawStdioClient(b, srv)
		req := rawRequest(b, cl)
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			if res, err := cl.CallTool(ctx, req); err != nil || res.IsError {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkStdioToolCallPaired alternates a Catalog.Call (the catalog
// alone, no task governance; its metrics keep the name "governed") and a
// raw call on every iteration, so both see the same machine conditions, and
// reports the median of each and their ratio.
func BenchmarkStdioToolCallPaired(b *testing.B) {
	srv := faultStdio(b, "bench", "ok")
	c := open(b, Options{Servers: []Server{srv}, Authority: allowAll(b, srv)})
	pairedCalls(b, c, rawStdioClient(b, srv))
}

// BenchmarkStdioToolCallSameLaunch is the paired comparison with both arms
// launched the same way: the raw mcp-go client also talks to a server
// started by internal/proc (own process group, cleared environment), over
// mcp-go's stdio transport. What differs is only the governance: argument
// handling, the per-call deadline, bounded frames, result checks and the
// ToolResult mapping.
func BenchmarkStdioToolCallSameLaunch(b *testing.B) {
	srv := faultStdio(b, "bench", "ok")
	c := open(b, Options{Servers: []Server{srv}, Authority: allowAll(b, srv)})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, err := proc.Start(ctx, &exec.Cmd{Path: srv.Command, Args: append([]string{srv.Command}, srv.Args...), Env: []string{}},
		proc.Options{PipeStdin: true, PipeStdout: true})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	cl := mcpclient.NewClient(transport.NewIO(p.Stdout(), p.Stdin(), nil))
	if err := cl.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	pairedCalls(b, c, cl)
}

// pairedCalls alternates governed and raw calls, their order flipping every
// iteration, and reports each median and their ratio.
func pairedCalls(b *testing.B, c *Catalog, cl *mcpclient.Client) {
	req := rawRequest(b, cl)
	ctx := context.Background()
	var governed, raw []time.Duration
	g := func() {
		t0 := time.Now()
		if r := c.Call(ctx, benchCall()); r.Status != "completed" {
			b.Fatalf("%+v", r)
		}
		governed = append(governed, time.Since(t0))
	}
	r := func() {
		t0 := time.Now()
		if res, err := cl.CallTool(ctx, req); err != nil || res.IsError {
			b.Fatal(err)
		}
		raw = append(raw, time.Since(t0))
	}
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			g()
			r()
		} else {
			r()
			g()
		}
	}
	med := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2].Nanoseconds())
	}
	gm, rm := med(governed), med(raw)
	b.ReportMetric(gm, "governed-median-ns")
	b.ReportMetric(rm, "raw-median-ns")
	b.ReportMetric(gm/rm, "governed/raw")
}
