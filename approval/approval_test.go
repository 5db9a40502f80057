package approval

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

// The request ID is the documented construction: "apr_" and the first 16
// bytes of SHA-256 over the four parts, each followed by a NUL byte, for
// parts that fit the stack buffer and parts that do not; the NUL keeps
// ("ab","c") and ("a","bc") apart.
func TestRequestIDIsBoundToAllFourPartsAsDocumented(t *testing.T) {
	long := strings.Repeat("x", 300)
	for _, p := range [][4]string{{"t", "a", "c", "sha256:00"}, {long, "a", "c", "d"}, {"", "", "", ""}} {
		sum := sha256.Sum256([]byte(p[0] + "\x00" + p[1] + "\x00" + p[2] + "\x00" + p[3] + "\x00"))
		if got, want := RequestID(p[0], p[1], p[2], p[3]), "apr_"+hex.EncodeToString(sum[:16]); got != want {
			t.Fatalf("RequestID(%.10q…) = %s, want %s", p[0], got, want)
		}
	}
	if RequestID("ab", "c", "d", "e") == RequestID("a", "bc", "d", "e") {
		t.Fatal("parts that concatenate alike gave the same ID")
	}
	if n := testing.AllocsPerRun(100, func() { _ = RequestID("task_1", "agent_1", "call_1", "sha256:00") }); n > 1 {
		t.Fatalf("RequestID allocates %v times, want 1 (the string)", n)
	}
}
