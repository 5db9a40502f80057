package redact

import (
	"encoding/base64"
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

// A known secret is masked however it is encoded: base64 in either
// alphabet, padded or not, alone or at any alignment inside a longer
// encoded text (a Basic credential's "user:"+secret). What stays of the
// encoding never decodes to the secret.
func TestKnownSecretIsMaskedBase64Encoded(t *testing.T) {
	const secret = "editor-token-4b1d9c2e7f?>~"
	var s Set
	s.Add(secret)
	for _, plain := range []string{secret, "u:" + secret, "user:" + secret, "x" + secret + "tail", secret + secret} {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
			encoded := enc.EncodeToString([]byte(plain))
			out := s.String(`{"auth":"Basic ` + encoded + `"}`)
			if strings.Contains(out, encoded) || !strings.Contains(out, Mask) {
				t.Errorf("base64 of %q: %s", plain, out)
			}
		}
	}
	if s.Len() != 1 {
		t.Fatalf("%d values registered, want the one added", s.Len())
	}
	if out := s.String("ordinary text, no encodings: QUJDREVGR0g="); out != "ordinary text, no encodings: QUJDREVGR0g=" {
		t.Fatalf("unrelated base64 masked: %s", out)
	}
}
