// Package tracecontext reads an incoming W3C Trace Context (the
// traceparent and tracestate headers a caller sends) into the remote span
// context a task's spans and trace ID continue. It parses strictly: the
// W3C rules for each version, lowercase hex, IDs not all zeros, each value
// at most [MaxBytes].
package tracecontext

import (
	"encoding/hex"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/trace"
)

// MaxBytes bounds each incoming W3C trace-context header value
// (traceparent and tracestate), as the reference host does.
const MaxBytes = 512

// ErrInvalid marks an incoming trace context that is not W3C Trace
// Context.
var ErrInvalid = errors.New("pablo: invalid trace context")

// Parse parses an incoming W3C Trace Context (a traceparent and an
// optional tracestate, each at most MaxBytes) into a remote span context.
// Baggage is never read.
//
// The traceparent follows the W3C rules: version 00 is exactly
// "00-{32 hex trace-id}-{16 hex parent-id}-{2 hex flags}" in lowercase, the
// IDs not all zeros; a higher version (never ff) may carry more fields after
// a dash, which are ignored. Errors wrap ErrInvalid.
func Parse(traceparent, tracestate string) (trace.SpanContext, error) {
	fail := func(format string, args ...any) (trace.SpanContext, error) {
		return trace.SpanContext{}, fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
	}
	if len(traceparent) > MaxBytes || len(tracestate) > MaxBytes {
		return fail("a traceparent or tracestate is longer than %d bytes", MaxBytes)
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
