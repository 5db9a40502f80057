package jsonx

import (
	"encoding/json"
	"fmt"
	"testing"
)

func TestAppendStringRoundTrips(t *testing.T) {
	for _, s := range []string{"", "plain", "q\"b\\", "\n\r\t\b\f\x00\x1f", "é ☃ 😀", "bad\xffutf8", "<&>"} {
		var back string
		if err := json.Unmarshal(AppendString(nil, s), &back); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		want := s
		if s == "bad\xffutf8" {
			want = "bad\ufffdutf8"
		}
		if back != want {
			t.Fatalf("%q round-tripped to %q", s, back)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	f.Add("a\"b\n\xff")
	f.Fuzz(func(t *testing.T, s string) {
		out := AppendString(nil, s)
		if !json.Valid(out) {
			t.Fatalf("invalid JSON for %q: %q", s, out)
		}
	})
}

func ExampleAppendString() {
	fmt.Println(string(AppendString(nil, "line\n\"quoted\"")))
	// Output: "line\n\"quoted\""
}
