package redact

import (
	"strings"
	"testing"
)

// TestPageEdgesInsideADetectedSecretMaskIt: with no known value registered
// (so nothing widens the look-around but the patterns' own reach), a page
// whose edge cuts a detected secret (an AWS key, a JWT, a PEM private-key
// block of a 4096-bit key, whose start lies kilobytes before the page)
// releases none of the secret's bytes: the part on the page is masked,
// found by the text beyond the edge.
func TestPageEdgesInsideADetectedSecretMaskIt(t *testing.T) {
	t.Parallel()
	var body strings.Builder
	for i := range 50 {
		body.WriteString(strings.Repeat(string(rune('A'+i%26))+"b3Bl", 16) + "\n")
	}
	pem := "-----BEGIN RSA PRIVATE KEY-----\n" + body.String() + "-----END RSA PRIVATE KEY-----"
	if len(pem) < 3000 {
		t.Fatalf("the PEM block is %d bytes; it must reach kilobytes past a page edge", len(pem))
	}
	for name, secret := range map[string]string{
		"aws": "AKIAIOSFODNN7EXAMPLE",
		"jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
		"pem": pem,
	} {
		var s Set
		head, tail := "head: ", " :tail\n"
		whole := []byte(head + secret + tail)
		start, end := len(head), len(head)+len(secret)
		if got, _ := s.MaskWindow(whole, 0, len(whole)); got != head+Mask+tail {
			t.Fatalf("%s: the whole text is not masked: %q", name, got)
		}
		for _, cut := range []int{start + 1, start + len(secret)/2, end - 1} {
			for _, page := range []struct {
				from, to int
				want     string
			}{
				{0, cut, head + Mask},
				{cut, len(whole), Mask + tail},
				{cut, min(cut+1, end), Mask},
			} {
				if got, _ := s.MaskWindow(whole, page.from, page.to); got != page.want {
					t.Errorf("%s: page [%d, %d) of a secret at [%d, %d) = %.60q, want %q", name, page.from, page.to, start, end, got, page.want)
				}
			}
		}
	}
}

// TestPageEdgesInsideALongKnownValueMaskIt: a known value longer than any
// pattern's reach (a 9,000-byte credential) widens the look-around to its
// own length: a page that starts 8,500 bytes into it, further than
// MaxPatternBytes from its start, masks the part on the page.
func TestPageEdgesInsideALongKnownValueMaskIt(t *testing.T) {
	t.Parallel()
	v := strings.Repeat("q7Zx", 2250)
	var s Set
	s.Add(v)
	head, tail := "head: ", " :tail\n"
	whole := []byte(head + v + tail)
	start, end := len(head), len(head)+len(v)
	if start+8500-MaxPatternBytes <= start {
		t.Fatal("the page must start further into the value than the patterns reach")
	}
	for _, page := range []struct {
		from, to int
		want     string
	}{
		{start + 8500, len(whole), Mask + tail},
		{0, start + 500, head + Mask},
		{start + 8500, end - 1, Mask},
	} {
		if got, _ := s.MaskWindow(whole, page.from, page.to); got != page.want {
			t.Errorf("page [%d, %d) of a known value at [%d, %d) = %.60q, want %q", page.from, page.to, start, end, got, page.want)
		}
	}
}
