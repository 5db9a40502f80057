package redact

import (
	"errors"
	"strings"
	"testing"
)

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

// A scheme-and-token value masks the token when it appears alone.
func TestSchemeTokenMasksTheTokenAlone(t *testing.T) {
	var s Set
	s.Add("Bearer tok-4242-secret")
	for _, in := range []string{"echo: Bearer tok-4242-secret", "echo: tok-4242-secret"} {
		if out := s.String(in); strings.Contains(out, "tok-4242") {
			t.Errorf("%q became %q", in, out)
		}
	}
	var plain Set
	plain.Add("two words here") // not a scheme and a single token
	if plain.Len() != 1 {
		t.Fatalf("%d values registered", plain.Len())
	}
}

func asPatternError(err error, pe **PatternError) bool {
	return errors.As(err, pe) && errors.Is(err, ErrInvalidPattern)
}
