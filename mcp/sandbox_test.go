package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"
)

// TestFaultServerRunsSandboxed: the fault server answers from inside the
// default sandbox (its directory shown read-only, no network), and a
// required sandbox that cannot be made fails the server's start closed.
func TestFaultServerRunsSandboxed(t *testing.T) {
	t.Parallel()
	srv := faultStdio(t, "boxed", "ok")
	srv.Sandbox = Sandbox{}
	srv.Dir = t.TempDir()
	c := open(t, Options{Servers: []Server{srv}, Authority: allowAll(t, srv)})
	res, err := c.CallTool(context.Background(), "mcp/boxed/echo", json.RawMessage(`{"message":"inside"}`))
	if err != nil || len(res.Text) == 0 || res.Text[0] != "echo: inside" {
		t.Fatalf("echo: %+v, %v", res, err)
	}

	_, err = Open(context.Background(), Options{Servers: []Server{srv}, Authority: allowAll(t, srv), BubblewrapPath: "/nonexistent/bwrap"})
	var se *ServerError
	if !errors.As(err, &se) || se.Code != CodeLauncher || !errors.Is(err, ErrSandboxUnavailable) {
		t.Fatalf("got %v; want mcp_launcher wrapping ErrSandboxUnavailable", err)
	}
}

// BenchmarkStdioToolCallSandbox compares a tools/call to the fault server
// running in the default sandbox with one to the same server unconfined,
// after startup: the two alternate on every iteration (their order flipping)
// and the medians and their ratio are reported (target: sandboxed/off ≤
// 1.05). The sandbox costs its start, not its calls: the pipes are the
// same pipes.
func BenchmarkStdioToolCallSandbox(b *testing.B) {
	off := faultStdio(b, "bench", "ok")
	boxed := off
	boxed.Sandbox, boxed.Dir = Sandbox{}, b.TempDir()
	co := open(b, Options{Servers: []Server{off}, Authority: allowAll(b, off)})
	cb := open(b, Options{Servers: []Server{boxed}, Authority: allowAll(b, boxed)})
	ctx := context.Background()
	var tOff, tBoxed []time.Duration
	call := func(c *Catalog, into *[]time.Duration) {
		t0 := time.Now()
		if r := c.Call(ctx, benchCall()); r.Status != "completed" {
			b.Fatalf("%+v", r)
		}
		*into = append(*into, time.Since(t0))
	}
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			call(co, &tOff)
			call(cb, &tBoxed)
		} else {
			call(cb, &tBoxed)
			call(co, &tOff)
		}
	}
	med := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2].Nanoseconds())
	}
	mo, mb := med(tOff), med(tBoxed)
	b.ReportMetric(mo, "off-median-ns")
	b.ReportMetric(mb, "sandboxed-median-ns")
	b.ReportMetric(mb/mo, "sandboxed/off")
}
