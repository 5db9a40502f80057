package acp_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/acp"
	"github.com/pabloagent/pablo/event"
)

type correlation struct {
	SchemaVersion string          `json:"schema_version"`
	RunID         string          `json:"run_id"`
	SessionID     string          `json:"session_id"`
	SeqStart      uint64          `json:"seq_start"`
	SeqEnd        uint64          `json:"seq_end"`
	TraceID       string          `json:"trace_id"`
	Deployment    json.RawMessage `json:"deployment"`
	Outcome       json.RawMessage `json:"outcome"`
	Task          json.RawMessage `json:"task"`
}

func metaOf(t *testing.T, raw json.RawMessage) correlation {
	t.Helper()
	var m struct {
		Meta struct {
			V2 *correlation `json:"pablo/v2"`
		} `json:"_meta"`
	}
	jsonUnmarshal(t, raw, &m)
	if m.Meta.V2 == nil {
		t.Fatalf("no pablo/v2 metadata: %s", raw)
	}
	return *m.Meta.V2
}

// With pablo/v2 every update carries its correlation (the run, the
// session, the native seq range, the trace the prompt's traceparent
// named, the deployment), the answer the terminal metadata, and
// pablo/model-route-v1 adds _pablo/v1/model_attempt notifications.
func TestNegotiatedExtensionsCorrelateEveryUpdate(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, fixtureOptions{script: toolScript})
	dep := &event.DeploymentRef{SchemaVersion: 1, ContractRevision: "c3.33", Fingerprint: "sha256:" + strings.Repeat("ab", 32)}
	p := serve(t, fx.sessions, acp.Options{Clock: newFakeClock(), Deployment: dep})
	p.initialize(acp.ExtV2, acp.ExtTaskV2, acp.ExtModelRoute)
	sid := p.newSession(2, fx.ws)
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	prompt := textPrompt(sid, "What is due?")
	prompt["_meta"] = map[string]any{"pablo/v2": map[string]any{"traceparent": "00-" + traceID + "-00f067aa0ba902b7-01"}}
	p.request(3, "session/prompt", prompt)
	frames, answer := p.until(3)
	var run string
	var lastEnd uint64
	attempts := 0
	for _, f := range frames {
		var c correlation
		switch f.Method {
		case "session/update":
			c = metaOf(t, f.Params)
		case acp.MethodModelAttempt:
			attempts++
			var n struct {
				V2 correlation `json:"pablo/v2"`
			}
			jsonUnmarshal(t, f.Params, &n)
			c = n.V2
		default:
			t.Fatalf("frame %s", f.raw)
		}
		if run == "" {
			run = c.RunID
		}
		if c.RunID != run || c.SessionID != sid || c.TraceID != traceID || c.SchemaVersion != event.SchemaVersion ||
			c.SeqStart > c.SeqEnd || c.SeqStart <= lastEnd || !strings.Contains(string(c.Deployment), dep.Fingerprint) {
			t.Fatalf("correlation %+v after seq %d: %s", c, lastEnd, f.raw)
		}
		lastEnd = c.SeqEnd
	}
	if attempts != 4 {
		t.Errorf("%d model_attempt notifications, want 4 (two calls, started and finished)", attempts)
	}
	if stopReasonOf(t, answer) != "end_turn" {
		t.Fatalf("answer %s", answer.raw)
	}
	term := metaOf(t, answer.Result)
	var task pablo.TaskObject
	jsonUnmarshal(t, term.Task, &task)
	if term.RunID != run || task.Outcome == nil || task.Outcome.Status != event.StatusCompleted || *task.RunID != run || term.Outcome != nil {
		t.Fatalf("terminal %s", answer.raw)
	}
}

// A failed task is -32603 with its terminal metadata in
// error.data["pablo/v2"] for a client that negotiated it, and a plain
// error for one that did not; an invalid traceparent is -32602.
func TestFailuresAreInternalErrorsWithTerminalMetadata(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, fixtureOptions{script: `{"turns":[{"text":[],"error":"provider_rejected","delivery":"response_received"}]}`})
	for _, negotiated := range []bool{true, false} {
		p := serve(t, fx.sessions, acp.Options{Clock: newFakeClock()})
		if negotiated {
			p.initialize(acp.ExtV2)
		} else {
			p.initialize()
		}
		sid := p.newSession(2, fx.ws)
		_, answer := func() ([]frame, frame) {
			p.request(3, "session/prompt", textPrompt(sid, "x"))
			return p.until(3)
		}()
		if answer.Error == nil || answer.Error.Code != -32603 || !strings.Contains(answer.Error.Message, "provider_rejected") {
			t.Fatalf("answer %s", answer.raw)
		}
		if !negotiated {
			if answer.Error.Data != nil {
				t.Fatalf("a generic client got metadata: %s", answer.raw)
			}
			continue
		}
		var data struct {
			V2 correlation `json:"pablo/v2"`
		}
		jsonUnmarshal(t, answer.Error.Data, &data)
		if !strings.Contains(string(data.V2.Outcome), `"status":"failed"`) || data.V2.RunID == "" {
			t.Fatalf("metadata %s", answer.raw)
		}
		bad := textPrompt(sid, "x")
		bad["_meta"] = map[string]any{"pablo/v2": map[string]any{"traceparent": "00-zz-00f067aa0ba902b7-01"}}
		if f := p.call(4, "session/prompt", bad); f.Error == nil || f.Error.Code != -32602 {
			t.Fatalf("bad traceparent: %s", f.raw)
		}
	}
}
