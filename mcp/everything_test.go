package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/pabloagent/pablo/ledger/outcome"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/ledger"
)

func TestEverythingStdio(t *testing.T) {
	p := needPeers(t)
	srv := p.everythingStdio("everything")
	// OnProgress runs on the goroutine that called the tool, so the
	// subtests may append without a lock.
	var progress []string
	c := open(t, Options{Servers: []Server{srv}, Authority: allowAll(t, srv),
		OnProgress: func(_ context.Context, tool authority.ID, msg string) {
			progress = append(progress, string(tool)+": "+msg)
		}})
	h := c.Health()[0]
	if h.Version != ProtocolVersion {
		t.Errorf("negotiated %q", h.Version)
	}
	if h.State != Degraded {
		t.Errorf("state %s: a task-required tool must leave the server Degraded", h.State)
	}
	ids := map[authority.ID]authority.ToolSpec{}
	for _, s := range c.Tools() {
		ids[s.ID] = s
	}
	for _, want := range []string{"echo", "get-sum", "get-structured-content", "get-tiny-image", "trigger-long-running-operation"} {
		if _, ok := ids[authority.MCPTool("everything", want)]; !ok {
			t.Errorf("tool %s not admitted; health %+v", want, h.Tools)
		}
	}
	for _, ts := range h.Tools {
		if ts.Name == "simulate-research-query" && (ts.Admitted || ts.Code != CodeTaskRequired) {
			t.Errorf("task-required tool: %+v", ts)
		}
		if !strings.HasPrefix(ts.Digest, "sha256:") || ts.Alias != Alias(ts.ID) || len(ts.Alias) != 52 {
			t.Errorf("tool status %+v", ts)
		}
	}
	ctx := context.Background()

	t.Run("TextResult", func(t *testing.T) {
		res, err := c.CallTool(ctx, "mcp/everything/echo", json.RawMessage(`{"message":"hello"}`))
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Text) != 1 || !strings.Contains(res.Text[0], "hello") || res.IsError {
			t.Fatalf("result %+v", res)
		}
	})
	t.Run("StructuredResultValidates", func(t *testing.T) {
		res, err := c.CallTool(ctx, "mcp/everything/get-structured-content", json.RawMessage(`{"location":"Chicago"}`))
		if err != nil {
			t.Fatal(err)
		}
		var v map[string]any
		if err := json.Unmarshal(res.Structured, &v); err != nil || v["conditions"] == nil {
			t.Fatalf("structured %s", res.Structured)
		}
	})
	t.Run("ArgumentsValidateBeforeSending", func(t *testing.T) {
		_, err := c.CallTool(ctx, "mcp/everything/get-sum", json.RawMessage(`{"a":1}`))
		if !errors.Is(err, authority.ErrContract) {
			t.Fatalf("want a contract error, got %v", err)
		}
		_, err = c.CallTool(ctx, "mcp/everything/get-sum", json.RawMessage(`{"a":1,"b":2,"c":3}`))
		if !errors.Is(err, authority.ErrContract) {
			t.Fatalf("an undeclared field must be refused, got %v", err)
		}
	})
	t.Run("ImageFailsExplicitly", func(t *testing.T) {
		_, err := c.CallTool(ctx, "mcp/everything/get-tiny-image", nil)
		var ce *ContentError
		if !errors.As(err, &ce) || ce.Type != "image" || !errors.Is(err, ErrUnsupportedContent) {
			t.Fatalf("want a ContentError naming image, got %v", err)
		}
		r := c.Call(ctx, authority.Call{ID: "c1", Tool: "mcp/everything/get-tiny-image"})
		if r.Status != outcome.ToolRecoverableError || !strings.Contains(string(mustJSON(r.Output)), `"content_type":"image"`) {
			t.Fatalf("tool result %+v", r)
		}
	})
	t.Run("ResourceFailsExplicitly", func(t *testing.T) {
		_, err := c.CallTool(ctx, "mcp/everything/get-resource-reference", json.RawMessage(`{}`))
		var ce *ContentError
		if !errors.As(err, &ce) || ce.Type != "resource" {
			t.Fatalf("want a ContentError naming resource, got %v", err)
		}
		_, err = c.CallTool(ctx, "mcp/everything/get-resource-links", json.RawMessage(`{"count":2}`))
		if !errors.As(err, &ce) || ce.Type != "resource_link" {
			t.Fatalf("want a ContentError naming resource_link, got %v", err)
		}
	})
	t.Run("Progress", func(t *testing.T) {
		res, err := c.CallTool(ctx, "mcp/everything/trigger-long-running-operation", json.RawMessage(`{"duration":0.3,"steps":3}`))
		if err != nil {
			t.Fatal(err)
		}
		if res.Progress < 1 {
			t.Fatalf("no progress counted: %+v", res)
		}
		// Each counted message reached the host while the call was in
		// flight, named after the tool.
		if len(progress) != res.Progress || !strings.HasPrefix(progress[0], "mcp/everything/trigger-long-running-operation: ") {
			t.Fatalf("%d counted, delivered %q", res.Progress, progress)
		}
	})
	t.Run("Cancellation", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		done := make(chan ledger.ToolResult)
		go func() {
			done <- c.Call(cctx, authority.Call{ID: "c2", Tool: "mcp/everything/trigger-long-running-operation", Arguments: json.RawMessage(`{"duration":30,"steps":30}`)})
		}()
		// Cancel once the call is in flight: its first progress arrived.
		waitProgress(t, c, "everything")
		cancel()
		r := <-done
		if r.Status != outcome.ToolCancelled || r.Delivery != outcome.MayHaveBeenSent {
			t.Fatalf("tool result %+v", r)
		}
		// The session still works after a cancelled call.
		if _, err := c.CallTool(ctx, "mcp/everything/echo", json.RawMessage(`{"message":"after"}`)); err != nil {
			t.Fatal(err)
		}
	})
}

// waitProgress blocks until the call in flight on server has reported
// progress.
func waitProgress(t *testing.T, c *Catalog, server string) {
	t.Helper()
	for _, s := range c.servers {
		if s.cfg.Name != server {
			continue
		}
		for i := 0; i < 2000; i++ {
			s.sess.progressMu.Lock()
			n := s.sess.progressCount
			s.sess.progressMu.Unlock()
			if n > 0 {
				return
			}
			sleepTick()
		}
	}
	t.Fatal("no progress arrived")
}
