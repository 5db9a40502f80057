package mcp

import (
	"context"
	"encoding/json"
	"testing"

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
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			if res, err := cl.CallTool(ctx, req); err != nil || res.IsError {
				b.Fatal(err)
			}
		}
	})
}
