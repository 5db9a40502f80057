package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/pabloagent/pablo/ledger/outcome"
)

// An event no blank line completes is not delivered (internal/sse's rule,
// the same through a2a, mcp and the providers): a response whose event
// lacks its blank line is a stream that ended without the response, so the
// call's outcome is unknown, never the cut event's result. This reader used
// to deliver it.
func TestUnterminatedLastEventIsNotDelivered(t *testing.T) {
	t.Parallel()
	_, conn, _ := newScripted(t, func(w http.ResponseWriter, r *http.Request, msg envelope) bool {
		if msg.Method == nil || *msg.Method != "tools/call" {
			return false
		}
		eventStream(w, ": keep-alive\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":"+string(msg.ID)+",\"result\":{\"ok\":true}}\n")
		return true
	})
	sess := initialized(t, conn)
	raw, err := sess.request(context.Background(), "tools/call", json.RawMessage(`{}`))
	var ce *CallError
	if raw != nil || !errors.As(err, &ce) || ce.Delivery != string(outcome.MayHaveBeenSent) || !errors.Is(err, ErrUnknownOutcome) {
		t.Fatalf("an unterminated last event was delivered: %s, %v", raw, err)
	}
	if !strings.Contains(err.Error(), "ended inside an event") {
		t.Fatalf("the error does not say the stream was cut inside an event: %v", err)
	}
}

// A stream cut inside an event after a complete event that named an ID is
// resumed from that ID, as the standard's reconnection is: the cut event
// is not delivered, and the server's replay of it is.
func TestStreamCutInsideAnEventResumesFromTheLastCompleteEvent(t *testing.T) {
	t.Parallel()
	callID := make(chan string, 1)
	srv, conn, _ := newScripted(t, func(w http.ResponseWriter, r *http.Request, msg envelope) bool {
		switch {
		case msg.Method != nil && *msg.Method == "tools/call":
			callID <- string(msg.ID)
			eventStream(w, "id: ev-1\nretry: 5\ndata: \n\nid: ev-2\ndata: {\"jsonrpc\":\"2.0\",\"id\":"+string(msg.ID)+",\"result\":{\"cut\":true}}")
			return true
		case r.Method == http.MethodGet:
			eventStream(w, "id: ev-2\ndata: {\"jsonrpc\":\"2.0\",\"id\":"+<-callID+",\"result\":{\"replayed\":true}}\n\n")
			return true
		}
		return false
	})
	sess := initialized(t, conn)
	raw, err := sess.request(context.Background(), "tools/call", json.RawMessage(`{}`))
	if err != nil || string(raw) != `{"replayed":true}` {
		t.Fatalf("%s %v", raw, err)
	}
	var get *seenRequest
	for _, q := range srv.requests() {
		if q.verb == http.MethodGet {
			get = &q
		}
	}
	if get == nil || get.lastEventID != "ev-1" {
		t.Fatalf("resuming GET %+v", get)
	}
}
