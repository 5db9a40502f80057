package pablo_test

import (
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/children"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/otlp"
)

// otlpReceiver is a loopback OTLP/HTTP receiver decoding each request with
// the official protos (TracesData is wire-identical to
// ExportTraceServiceRequest).
type otlpReceiver struct {
	srv   *httptest.Server
	mu    sync.Mutex
	spans []*tracepb.Span
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	r := &otlpReceiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var td tracepb.TracesData
		if req.URL.Path != "/v1/traces" || proto.Unmarshal(body, &td) != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		for _, rs := range td.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				r.spans = append(r.spans, ss.Spans...)
			}
		}
		r.mu.Unlock()
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// agentSpans returns the exported invoke_agent spans by their
// pablo.agent.id.
func (r *otlpReceiver) agentSpans() map[string]*tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]*tracepb.Span{}
	for _, s := range r.spans {
		if s.Name != "invoke_agent" {
			continue
		}
		for _, kv := range s.Attributes {
			if kv.Key == "pablo.agent.id" {
				out[kv.Value.GetStringValue()] = s
			}
		}
	}
	return out
}

// TestChildSpanIsUnderItsParentAgentSpan: a local child's invoke_agent
// span is a child of its parent agent's span in the task's one trace, with
// or without an incoming trace context, and the spans the public otlp
// exporter sends (decoded with the official protos) draw the same tree as
// the native trace (the task's events: each agent's parent and trace ID).
func TestChildSpanIsUnderItsParentAgentSpan(t *testing.T) {
	incoming, err := pablo.ParseTraceContext("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		ctx  context.Context
	}{
		{"no incoming trace context", context.Background()},
		{"an incoming trace context", trace.ContextWithRemoteSpanContext(context.Background(), incoming)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rcv := newOTLPReceiver(t)
			exp, err := otlp.New(otlp.Options{Endpoint: rcv.srv.URL + "/v1/traces"})
			if err != nil {
				t.Fatal(err)
			}
			tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
			defer tp.Shutdown(context.Background())
			set, err := authority.New(authority.Config{Native: []authority.ID{authority.Subagent}})
			if err != nil {
				t.Fatal(err)
			}
			rt, err := pablo.NewRuntime(pablo.RuntimeOptions{Model: &fanInModel{}, Authority: set, Children: &children.Capacity{}, Tracer: tp.Tracer("test")})
			if err != nil {
				t.Fatal(err)
			}
			task, err := rt.Start(tc.ctx, fanInRoot)
			if err != nil {
				t.Fatal(err)
			}
			// The native trace: each agent's parent agent and trace ID.
			parent, traceIDs := map[string]string{}, map[string]bool{}
			root := ""
			for ev := range task.Events() {
				parent[ev.Agent.AgentID] = ev.Agent.ParentAgentID
				traceIDs[ev.TraceID] = true
				if ev.Agent.Depth == 0 {
					root = ev.Agent.AgentID
				}
			}
			obj := task.Wait()
			if obj.Outcome.Status != event.StatusCompleted || len(parent) != 3 || len(traceIDs) != 1 {
				t.Fatalf("outcome %+v, agents %v, trace IDs %v", obj.Outcome, parent, traceIDs)
			}
			if err := tp.ForceFlush(context.Background()); err != nil {
				t.Fatal(err)
			}
			spans := rcv.agentSpans()
			if len(spans) != 3 {
				t.Fatalf("%d invoke_agent spans exported, want the root's and two children's", len(spans))
			}
			for agent, parentAgent := range parent {
				s := spans[agent]
				if s == nil {
					t.Fatalf("agent %s has no invoke_agent span", agent)
				}
				if got := hex.EncodeToString(s.TraceId); got != *obj.TraceID || !traceIDs[got] {
					t.Errorf("agent %s: span trace %s, the task's (and its events') %s", agent, got, *obj.TraceID)
				}
				want := ""
				if parentAgent != "" {
					want = hex.EncodeToString(spans[parentAgent].SpanId)
				} else if tc.ctx != context.Background() {
					want = incoming.SpanID().String()
				}
				if got := hex.EncodeToString(s.ParentSpanId); got != want {
					t.Errorf("agent %s (parent agent %q): parent span %q, want %q", agent, parentAgent, got, want)
				}
			}
			if tc.ctx != context.Background() && *obj.TraceID != incoming.TraceID().String() {
				t.Errorf("trace %s, want the caller's %s", *obj.TraceID, incoming.TraceID())
			}
			if parent[root] != "" {
				t.Errorf("the root has a parent agent %q", parent[root])
			}
		})
	}
}
