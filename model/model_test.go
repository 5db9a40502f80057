package model

import (
	"context"
	"errors"
	"testing"

	"github.com/pabloagent/pablo/ledger/outcome"
)

// A model error names its code and delivery and keeps its cause for
// errors.Is.
func TestErrorKeepsItsCause(t *testing.T) {
	err := &Error{Code: outcome.FailProviderTransport, Delivery: outcome.MayHaveBeenSent, Err: context.DeadlineExceeded}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatal("the cause is lost")
	}
	if got, want := err.Error(), "model provider_transport (may_have_been_sent): context deadline exceeded"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if got, want := (&Error{Code: outcome.FailProviderRejected, Delivery: outcome.ResponseReceived}).Error(), "model provider_rejected (response_received)"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// The run loop's turn number travels with the request but is not one of
// its public fields: a request a host builds has none.
func TestTurnTravelsWithTheRequest(t *testing.T) {
	req := &Request{Instructions: "be brief"}
	if Turn(req) != 0 {
		t.Fatal("a new request has a turn")
	}
	SetTurn(req, 3)
	if Turn(req) != 3 {
		t.Fatalf("turn %d, want 3", Turn(req))
	}
}
