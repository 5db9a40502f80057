package engine

import "context"

type toolOutputKey struct{}

// WithToolOutput returns a context that carries the live-output
// callback for one tool call. The engine sets it; a catalog reads it with
// ToolOutput to stream progress (bounded and coalesced by the engine) as
// tool.output events.
func WithToolOutput(ctx context.Context, f func(stream string, chunk []byte)) context.Context {
	return context.WithValue(ctx, toolOutputKey{}, f)
}

// ToolOutput returns the live-output callback of the current tool call, or
// nil.
func ToolOutput(ctx context.Context) func(stream string, chunk []byte) {
	f, _ := ctx.Value(toolOutputKey{}).(func(string, []byte))
	return f
}
