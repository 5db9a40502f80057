package redact

import "testing"

func TestKnownSecretIsMasked(t *testing.T) {
	var s Set
	s.Add("sk-live-123456")
	s.Add("ab") // too short to mask
	got := s.String("token=sk-live-123456; again sk-live-123456; ab")
	want := "token=[redacted]; again [redacted]; ab"
	if got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if b := s.Bytes([]byte("nothing here")); string(b) != "nothing here" {
		t.Fatalf("unexpected change: %q", b)
	}
	var nilSet *Set
	if nilSet.String("x") != "x" {
		t.Fatal("nil set must be a no-op")
	}
}
