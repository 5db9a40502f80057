package pablo

import (
	"context"

	"github.com/pabloagent/pablo/internal/engine"
)

// WithToolOutput returns a context that carries the engine's live-output
// callback for one tool call. The engine sets it; a catalog reads it with
// ToolOutput to stream progress (bounded and coalesced by the engine) as
// tool.output events.
func WithToolOutput(ctx context.Context, f func(stream string, chunk []byte)) context.Context {
	return engine.WithToolOutput(ctx, f)
}

// ToolOutput returns the live-output callback of the current tool call, or
// nil.
func ToolOutput(ctx context.Context) func(stream string, chunk []byte) {
	return engine.ToolOutput(ctx)
}
