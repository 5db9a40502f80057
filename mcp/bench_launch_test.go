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

// BenchmarkStdioToolCallSameLaunch is the paired comparison with both arms
// launched the same way: the raw mcp-go client also talks to a server
// started by internal/proc (own process group, cleared environment), over
// mcp-go's stdio transport. What differs is only the governance: argument
// handling, the per-call deadline, bounded frames, result checks and the
// ToolResult mapping.
func BenchmarkStdioToolCallSameLaunch(b *testing.B) {
	srv := faultStdio(b, "bench", "ok")
	c := open(b, Options{Servers: []Server{srv}, Authority: allowAll(b, srv)})
	call := authority.Call{ID: "1", Tool: "mcp/bench/echo", Arguments: json.RawMessage(`{"message":"hello"}`)}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, err := proc.Start(ctx, &exec.Cmd{Path: srv.Command, Args: append([]string{srv.Command}, srv.Args...), Env: []string{}},
		proc.Options{PipeStdin: true, PipeStdout: true})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	tr := transport.NewIO(p.Stdout(), p.Stdin(), nil)
	cl := mcpclient.NewClient(tr)
	if err := cl.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
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
