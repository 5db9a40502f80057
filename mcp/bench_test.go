package mcp

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/pabloagent/pablo/authority"
)

// BenchmarkStdioToolCall compares one governed tools/call through the
// catalog (argument validation, per-server lock, result parsing, redaction,
// ToolResult mapping) with a raw mcp-go client call to the same stdio
// server. Compare the two with benchstat; the target is governed ≤ 1.05×
// raw at the median.
func BenchmarkStdioToolCall(b *testing.B) {
	srv := faultStdio(b, "bench", "ok")
	b.Run("governed", func(b *testing.B) {
		c := open(b, Options{Servers: []Server{srv}, Authority: allowAll(b, srv)})
		call := authority.Call{ID: "1", Tool: "mcp/bench/echo", Arguments: json.RawMessage(`{"message":"hello"}`)}
		ctx := context.Background()
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			if r := c.Call(ctx, call); r.Status != "completed" {
				b.Fatalf("%+v", r)
			}
		}
	})
	b.Run("raw", func(b *testing.B) {
		cl, err := mcpclient.NewStdioMCPClient(srv.Command, nil, srv.Args...)
		if err != nil {
			b.Fatal(err)
		}
		defer cl.Close()
		ctx := context.Background()
		init := mcpgo.InitializeRequest{}
		init.Params.ProtocolVersion = ProtocolVersion
		init.Params.ClientInfo = mcpgo.Implementation{Name: "bench", Version: "1"}
		if _, err := cl.Initialize(ctx, init); err != nil {
			b.Fatal(err)
		}
		req := mcpgo.CallToolRequest{}
		req.Params.Name = "echo"
		req.Params.Arguments = map[string]any{"message": "hello"}
		// The governed call asks for progress with a token; the raw call asks the
		// same, so both arms send the same request and only governance differs.
		req.Params.Meta = &mcpgo.Meta{ProgressToken: 1}
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			if res, err := cl.CallTool(ctx, req); err != nil || res.IsError {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkStdioToolCallPaired alternates a governed and a raw call on
// every iteration, so both see the same machine conditions, and reports the
// median of each and their ratio (target: governed/raw ≤ 1.05).
func BenchmarkStdioToolCallPaired(b *testing.B) {
	srv := faultStdio(b, "bench", "ok")
	c := open(b, Options{Servers: []Server{srv}, Authority: allowAll(b, srv)})
	call := authority.Call{ID: "1", Tool: "mcp/bench/echo", Arguments: json.RawMessage(`{"message":"hello"}`)}
	cl, err := mcpclient.NewStdioMCPClient(srv.Command, nil, srv.Args...)
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	init := mcpgo.InitializeRequest{}
	init.Params.ProtocolVersion = ProtocolVersion
	init.Params.ClientInfo = mcpgo.Implementation{Name: "bench", Version: "1"}
	if _, err := cl.Initialize(ctx, init); err != nil {
		b.Fatal(err)
	}
	req := mcpgo.CallToolRequest{}
	req.Params.Name = "echo"
	req.Params.Arguments = map[string]any{"message": "hello"}
	// The governed call asks for progress with a token; the raw call asks the
	// same, so both arms send the same request and only governance differs.
	req.Params.Meta = &mcpgo.Meta{ProgressToken: 1}
	var governed, raw []time.Duration
	for i := 0; b.Loop(); i++ {
		g := func() {
			t0 := time.Now()
			if r := c.Call(ctx, call); r.Status != "completed" {
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
