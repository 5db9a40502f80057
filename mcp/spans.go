package mcp

import (
	"context"
	"errors"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// MCP client spans follow the OpenTelemetry semantic conventions for MCP
// (Development status): a CLIENT span per request named "{method}" or
// "tools/call {tool}", with mcp.method.name, mcp.protocol.version,
// jsonrpc.request.id, gen_ai.tool.name, network.transport and, on failure,
// error.type. The convention's mcp.session.id is left out: a Streamable
// HTTP session ID is a bearer value for that session, and telemetry is no
// place for it. No trace context is sent to servers either: a server is a
// third party, and the trace is the host's.

// startSpan starts the span of one request when the session has a tracer;
// otherwise it returns ctx and a nil span.
func (s *session) startSpan(ctx context.Context, method, tool string) (context.Context, trace.Span) {
	if s.tracer == nil {
		return ctx, nil
	}
	name := method
	attrs := []attribute.KeyValue{attribute.String("mcp.method.name", method), attribute.String("network.transport", s.transport)}
	if tool != "" {
		name += " " + tool
		attrs = append(attrs, attribute.String("gen_ai.tool.name", tool), attribute.String("gen_ai.operation.name", "execute_tool"))
	}
	if s.version != "" {
		attrs = append(attrs, attribute.String("mcp.protocol.version", s.version))
	}
	return s.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
}

// requestSpan adds what only the send knows: the request ID.
func (s *session) requestSpan(ctx context.Context, id int64) {
	if s.tracer == nil {
		return
	}
	trace.SpanFromContext(ctx).SetAttributes(attribute.String("jsonrpc.request.id", strconv.FormatInt(id, 10)))
}

// endSpan records how the request ended: a JSON-RPC error by its code, a
// tool's own isError as tool_error, anything else by its kind.
func endSpan(span trace.Span, err error, toolError bool) {
	if span == nil {
		return
	}
	defer span.End()
	var rpc *RPCError
	var ce *CallError
	switch {
	case err == nil && toolError:
		span.SetAttributes(attribute.String("error.type", "tool_error"))
		span.SetStatus(codes.Error, "the tool reported an error")
		return
	case err == nil:
		return
	case errors.As(err, &rpc):
		code := strconv.Itoa(rpc.Code)
		span.SetAttributes(attribute.String("error.type", code), attribute.String("rpc.response.status_code", code))
	case errors.As(err, &ce) && ce.Kind != nil:
		span.SetAttributes(attribute.String("error.type", errorType(ce.Kind)))
	default:
		span.SetAttributes(attribute.String("error.type", "_OTHER"))
	}
	span.SetStatus(codes.Error, errorType(err))
}

// errorType names an error by its sentinel, never by its text (which may
// quote a server).
func errorType(err error) string {
	for _, k := range []error{ErrUnknownOutcome, ErrSessionEnded, ErrProtocol, ErrBound, ErrRedirect, context.Canceled, context.DeadlineExceeded} {
		if errors.Is(err, k) {
			return k.Error()
		}
	}
	return "_OTHER"
}
