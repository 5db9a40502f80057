package pablo

import (
	"go.opentelemetry.io/otel/trace"

	"github.com/pabloagent/pablo/internal/tracecontext"
)

// ErrTraceContext marks an incoming trace context that is not W3C Trace
// Context.
var ErrTraceContext = tracecontext.ErrInvalid

// ParseTraceContext parses an incoming W3C Trace Context (a traceparent
// and an optional tracestate, each at most 512 bytes, as the reference
// host bounds them) into a remote span context. Put it on the context given
// to Runtime.Start with trace.ContextWithRemoteSpanContext: the task's
// spans become children of the caller's span, and its events and task
// object carry the caller's trace ID. Baggage is never read.
//
// The traceparent follows the W3C rules: version 00 is exactly
// "00-{32 hex trace-id}-{16 hex parent-id}-{2 hex flags}" in lowercase, the
// IDs not all zeros; a higher version (never ff) may carry more fields after
// a dash, which are ignored. Errors wrap ErrTraceContext.
func ParseTraceContext(traceparent, tracestate string) (trace.SpanContext, error) {
	return tracecontext.Parse(traceparent, tracestate)
}
