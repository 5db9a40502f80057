package pablo

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/pabloagent/pablo/authority"
)

func TestIncomingTraceContextGivesTheTaskItsTraceID(t *testing.T) {
	sc, err := ParseTraceContext("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "")
	if err != nil {
		t.Fatal(err)
	}
	s, _ := ParseScript([]byte(`{"turns":[{"text":["ok"]}]}`))
	set, _ := authority.New(authority.Config{})
	rt, err := NewRuntime(RuntimeOptions{Model: NewScriptModel(s), Authority: set})
	if err != nil {
		t.Fatal(err)
	}
	obj, _ := rt.Run(trace.ContextWithRemoteSpanContext(context.Background(), sc), "go")
	if *obj.TraceID != sc.TraceID().String() {
		t.Fatalf("trace ID %s, want the caller's %s", *obj.TraceID, sc.TraceID())
	}
}
