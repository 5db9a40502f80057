package acp

import (
	"encoding/json"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/pabloagent/pablo/event"
)

// BenchmarkProjectUpdate is the per-update cost of the projection: one
// event in, one frame out (a generic client, and one that negotiated
// pablo/v2), for the hot agent_message_chunk and for a tool_call.
func BenchmarkProjectUpdate(b *testing.B) {
	delta := event.Event{SchemaVersion: event.SchemaVersion, Seq: 7, RunID: "0b5e0f3c-6a7d-4d2e-9b9f-2f0e4c1a8d11", SessionID: "s-1",
		TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", EventData: event.EventData{Type: event.TextDelta, Text: "The invoice INV-1042 was paid "}}
	tool := delta
	tool.EventData = event.EventData{Type: event.ToolStarted, Call: &event.Call{ID: "c1", Name: "fs.read", Arguments: json.RawMessage(`{"path":"evidence.md"}`)}}
	sink := func([]byte) error { return nil }
	for _, bc := range []struct {
		name string
		ev   event.Event
		ext  extensions
	}{
		{"chunk/generic", delta, extensions{}},
		{"chunk/v2", delta, extensions{v2: true}},
		{"tool_call/generic", tool, extensions{}},
		{"tool_call/v2", tool, extensions{v2: true}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			p := newProjector("s-1", bc.ext, &event.DeploymentRef{SchemaVersion: 1, ContractRevision: "c3.33", Fingerprint: "sha256:00"}, DefaultCoalesceBytes)
			b.ReportAllocs()
			for b.Loop() {
				p.fresh = true // every delta the first of its operation: one frame each
				if err := p.event(&bc.ev, sink); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkChunkEncodingSDK is the SDK's encoding of the same chunk
// notification, the measured reason the hot path is written by hand.
func BenchmarkChunkEncodingSDK(b *testing.B) {
	n := sdk.SessionNotification{SessionId: "s-1", Update: sdk.UpdateAgentMessageText("The invoice INV-1042 was paid ")}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(n); err != nil {
			b.Fatal(err)
		}
	}
}
