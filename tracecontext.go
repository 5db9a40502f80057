package pablo

import (
	"encoding/hex"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/trace"
)

// MaxTraceContextBytes bounds each incoming W3C trace-context header value
// (traceparent and tracestate), as the reference host does.
const MaxTraceContextBytes = 512

// ErrTraceContext marks an incoming trace context that is not W3C Trace
// Context.
var ErrTraceContext = errors.New("pablo: invalid trace context")

// ParseTraceContext parses an incoming W3C Trace Context (a traceparent
// and an optional tracestate, each at most MaxTraceContextBytes) into a
// remote span context. Put it on the context given to Runtime.Start with
// trace.ContextWithRemoteSpanContext: the task's spans become children of
// the caller's span, and its events and task object carry the caller's
// trace ID. Baggage is never read.
//
// The traceparent follows the W3C rules: version 00 is exactly
// "00-{32 hex trace-id}-{16 hex parent-id}-{2 hex flags}" in lowercase, the
// IDs not all zeros; a higher version (never ff) may carry more fields after
// a dash, which are ignored. Errors wrap ErrTraceContext.
func ParseTraceContext(traceparent, tracestate string) (trace.SpanContext, error) {
	fail := func(format string, args ...any) (trace.SpanContext, error) {
		return trace.SpanContext{}, fmt.Errorf("%w: %s", ErrTraceContext, fmt.Sprintf(format, args...))
	}
	if len(traceparent) > MaxTraceContextBytes || len(tracestate) > MaxTraceContextBytes {
		return fail("a traceparent or tracestate is longer than %d bytes", MaxTraceContextBytes)
	}
	const size = len("00-") + 32 + 1 + 16 + 1 + 2
	tp := traceparent
	if len(tp) < size || tp[2] != '-' || tp[35] != '-' || tp[52] != '-' {
		return fail("traceparent must look like 00-{32 hex}-{16 hex}-{2 hex}")
	}
	version, ok := lowerHex(tp[:2])
	switch {
	case !ok || version[0] == 0xff:
		return fail("traceparent version must be two lowercase hex digits other than ff")
	case version[0] == 0 && len(tp) != size:
		return fail("a version 00 traceparent has exactly %d characters", size)
	case len(tp) > size && tp[size] != '-':
		return fail("traceparent fields after the flags must follow a dash")
	}
	var sc trace.SpanContextConfig
	tid, ok1 := lowerHex(tp[3:35])
	sid, ok2 := lowerHex(tp[36:52])
	flags, ok3 := lowerHex(tp[53:55])
	if !ok1 || !ok2 || !ok3 {
		return fail("traceparent IDs and flags must be lowercase hex")
	}
	copy(sc.TraceID[:], tid)
	copy(sc.SpanID[:], sid)
	if !sc.TraceID.IsValid() || !sc.SpanID.IsValid() {
		return fail("traceparent trace-id and parent-id must not be all zeros")
	}
	sc.TraceFlags = trace.TraceFlags(flags[0]) & trace.FlagsSampled
	sc.Remote = true
	if tracestate != "" {
		ts, err := trace.ParseTraceState(tracestate)
		if err != nil {
			return fail("tracestate: %v", err)
		}
		sc.TraceState = ts
	}
	return trace.NewSpanContext(sc), nil
}

// lowerHex decodes s when it is lowercase hex only.
func lowerHex(s string) ([]byte, bool) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return nil, false
		}
	}
	b, err := hex.DecodeString(s)
	return b, err == nil
}
