package a2a

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/pabloagent/pablo/ledger/outcome"
)

// TestTraceContextOnlyWhenNegotiated: the caller's span context travels
// (traceparent, with the extension named) only when the host opted in and
// the card offers the extension; remote IDs stay apart from the trace.
func TestTraceContextOnlyWhenNegotiated(t *testing.T) {
	t.Parallel()
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ctx := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}))
	for _, tc := range []struct {
		optIn, offered, want bool
	}{{true, true, true}, {false, true, false}, {true, false, false}} {
		p := newFaultPeer(t)
		p.setCard(func(w http.ResponseWriter, r *http.Request) {
			c := goodCard(p.endpoint())
			if tc.offered {
				c["capabilities"] = map[string]any{"extensions": []any{map[string]any{"uri": TraceExtension}}}
			}
			w.Header().Set("Content-Type", "application/json")
			w.Write(mustJSON(t, c))
		})
		var mu sync.Mutex
		var got http.Header
		p.srv.Config.Handler = wrapHeaders(p.srv.Config.Handler, func(h http.Header) { mu.Lock(); got = h.Clone(); mu.Unlock() })
		p.setRPC(func(w http.ResponseWriter, req rpcRequest) {
			result(w, req, task("t1", "c1", "TASK_STATE_COMPLETED", textArtifact("a1", "ok")))
		})
		remote := p.remote()
		remote.TraceContext = tc.optIn
		r := newRunner(t, Options{Remotes: []Remote{remote}})
		h, err := r.StartRemote(ctx, spec("peer", "x", false))
		if err != nil {
			t.Fatal(err)
		}
		waitDone(t, h)
		if h.Result().Outcome.Status != outcome.Completed {
			t.Fatalf("%+v", h.Result().Outcome)
		}
		mu.Lock()
		tp, ext := got.Get("Traceparent"), got.Get("A2A-Extensions")
		mu.Unlock()
		if sent := strings.Contains(tp, "4bf92f3577b34da6a3ce929d0e0e4736") && ext == TraceExtension; sent != tc.want || !tc.want && (tp != "" || ext != "") {
			t.Fatalf("opt-in %v offered %v: traceparent %q, extensions %q", tc.optIn, tc.offered, tp, ext)
		}
	}
}

// wrapHeaders records the headers of every RPC request before h serves it.
func wrapHeaders(h http.Handler, record func(http.Header)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/rpc" {
			record(r.Header)
		}
		h.ServeHTTP(w, r)
	})
}

// TestErrorCodesKeepTheirPinnedMeanings: -32001..-32009 each have their
// own meaning, and a peer's code never brings its text.
func TestErrorCodesKeepTheirPinnedMeanings(t *testing.T) {
	t.Parallel()
	want := map[int]string{
		-32001: "task not found", -32002: "task not cancelable", -32003: "push notifications not supported",
		-32004: "unsupported operation", -32005: "content type not supported", -32006: "invalid agent response",
		-32007: "extended agent card not configured", -32008: "extension support required", -32009: "version not supported",
	}
	for code, meaning := range want {
		if got := CodeMeaning(code); got != meaning {
			t.Errorf("%d: %q, want %q", code, got, meaning)
		}
		e := &ProtocolError{Remote: "r", Method: "SendMessage", Code: code, Detail: "the peer answered with an error", PeerMessageBytes: 12}
		if !strings.Contains(e.Error(), meaning) || !strings.Contains(e.Error(), "withheld") {
			t.Errorf("%d: %v", code, e)
		}
	}
	if CodeMeaning(-32010) != "" || !strings.Contains((&ProtocolError{Code: -32010}).Error(), "unpinned") {
		t.Error("an unpinned code got a meaning")
	}
}
