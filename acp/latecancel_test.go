package acp_test

import (
	"strings"
	"testing"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/acp"
	"github.com/pabloagent/pablo/event"
)

// A cancel that arrives after the task settled, before its answer is
// written, still answers cancelled; the metadata keeps the real outcome.
func TestALateCancelAnswersCancelledWithTheRealOutcome(t *testing.T) {
	t.Parallel()
	settled := make(chan struct{})
	fx := newFixture(t, fixtureOptions{script: `{"turns":[{"text":["done"]}]}`, runtime: func(o *pablo.RuntimeOptions) {
		o.Sink = func(ev event.Event) error {
			if ev.Type == event.RunFinished {
				close(settled)
			}
			return nil
		}
	}})
	p := serve(t, fx.sessions, acp.Options{Clock: newFakeClock()})
	p.initialize(acp.ExtV2)
	sid := p.newSession(2, fx.ws)
	// The client reads nothing until the task has settled: its first
	// update waits in the writer, and so does the answer.
	p.request(3, "session/prompt", textPrompt(sid, "x"))
	<-settled
	p.notify("session/cancel", map[string]any{"sessionId": sid})
	// The notification's write returns once the reader has read it, not
	// once it is handled: until it is, reading the first update would let
	// the answer be decided before the cancel arrives.
	p.handled()
	_, answer := p.until(3)
	if stopReasonOf(t, answer) != "cancelled" {
		t.Fatalf("answer %s", answer.raw)
	}
	if m := metaOf(t, answer.Result); string(m.Outcome) == "" || !strings.Contains(string(m.Outcome), `"status":"completed"`) {
		t.Fatalf("the metadata lost the real outcome: %s", answer.raw)
	}
}
