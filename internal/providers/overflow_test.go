package providers

import (
	"strings"
	"testing"
)

// TestOverflowCodeOnlyExplicitWithinTheBound: the two explicit codes in
// error.code (or a flattened code) count; the words in a message, another
// member, a code past the 8 KiB bound or a body of 8 KiB + 1 do not.
func TestOverflowCodeOnlyExplicitWithinTheBound(t *testing.T) {
	pad := func(n int, tail string) string {
		head := `{"error":{"message":"`
		mid := `","type":"invalid_request_error","code":"` + tail + `"}}`
		return head + strings.Repeat("x", n-len(head)-len(mid)) + mid
	}
	for _, tc := range []struct {
		name, body string
		want       bool
	}{
		{"400 openai", `{"error":{"message":"too long","type":"invalid_request_error","code":"context_length_exceeded"}}`, true},
		{"413 window", `{"error":{"code":"context_window_exceeded"}}`, true},
		{"flattened", `{"code":"context_length_exceeded"}`, true},
		{"words only", `{"error":{"message":"context_length_exceeded","code":"invalid_request"}}`, false},
		{"type only", `{"error":{"type":"context_length_exceeded"}}`, false},
		{"numeric code", `{"error":{"code":400}}`, false},
		{"not json", `context_length_exceeded`, false},
		{"at the bound", pad(MaxOverflowBodyBytes, OverflowContextLength), true},
		{"one past the bound", pad(MaxOverflowBodyBytes+1, OverflowContextLength), false},
	} {
		if got := OverflowCode([]byte(tc.body)); got != tc.want {
			t.Errorf("%s (%d bytes): %v, want %v", tc.name, len(tc.body), got, tc.want)
		}
	}
	if n := len(pad(MaxOverflowBodyBytes, "x")); n != MaxOverflowBodyBytes {
		t.Fatalf("pad made %d bytes", n)
	}
	if !readOverflowCode(strings.NewReader(pad(MaxOverflowBodyBytes, OverflowContextWindow))) ||
		readOverflowCode(strings.NewReader(pad(MaxOverflowBodyBytes+1, OverflowContextWindow))) {
		t.Fatal("the reader's bound is not OverflowCode's")
	}
}

// FuzzOverflowCode: no body panics the inspection, and one that counts is
// always within the bound.
func FuzzOverflowCode(f *testing.F) {
	f.Add([]byte(`{"error":{"code":"context_length_exceeded"}}`))
	f.Add([]byte(`{"code":"context_window_exceeded"}`))
	f.Add([]byte(`{"error":null,"code":"x"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		if OverflowCode(body) && len(body) > MaxOverflowBodyBytes {
			t.Fatal("a body past the bound counted")
		}
	})
}
