package mcp

import (
	"context"
	"encoding/json"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// Each request is a client span named as the MCP semantic conventions say;
// a tool call is a child of the caller's span, and a tool's isError is
// error.type tool_error.
func TestRequestsAreClientSpans(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tracer := tp.Tracer("test")
	srv := faultStdio(t, "records", "ok")
	c := open(t, Options{Servers: []Server{srv}, Authority: allowAll(t, srv), Tracer: tracer})
	ctx, parent := tracer.Start(context.Background(), "execute_tool")
	if _, err := c.CallTool(ctx, "mcp/records/echo", json.RawMessage(`{"message":"hi"}`)); err != nil {
		t.Fatal(err)
	}
	if res, err := c.CallTool(ctx, "mcp/records/fail", json.RawMessage(`{}`)); err != nil || !res.IsError {
		t.Fatalf("fail: %+v %v", res, err)
	}
	parent.End()
	byName := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		byName[s.Name()] = s
	}
	attrs := func(s sdktrace.ReadOnlySpan) map[attribute.Key]string {
		m := map[attribute.Key]string{}
		for _, kv := range s.Attributes() {
			m[kv.Key] = kv.Value.String()
		}
		return m
	}
	for _, name := range []string{"initialize", "tools/list", "tools/call echo", "tools/call fail"} {
		s, ok := byName[name]
		if !ok {
			t.Fatalf("no span %q among %v", name, byName)
		}
		a := attrs(s)
		if s.SpanKind() != trace.SpanKindClient || a["network.transport"] != "pipe" || a["jsonrpc.request.id"] == "" {
			t.Errorf("%s: kind %v, attributes %v", name, s.SpanKind(), a)
		}
	}
	echo := byName["tools/call echo"]
	if a := attrs(echo); a["mcp.method.name"] != "tools/call" || a["gen_ai.tool.name"] != "echo" || a["mcp.protocol.version"] != ProtocolVersion {
		t.Errorf("echo attributes %v", a)
	}
	if echo.Parent().SpanID() != parent.SpanContext().SpanID() {
		t.Error("the tool call's span is not a child of the caller's")
	}
	if a := attrs(byName["tools/call fail"]); a["error.type"] != "tool_error" {
		t.Errorf("fail attributes %v", a)
	}
}
