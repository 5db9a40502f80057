package jsonx

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
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

func ExampleAppendString() {
	fmt.Println(string(AppendString(nil, "line\n\"quoted\"")))
	// Output: "line\n\"quoted\""
}

// appendStringOracle is the byte-at-a-time encoder the fast path must match.
func appendStringOracle(out []byte, s string) []byte {
	const hexdigits = "0123456789abcdef"
	out = append(out, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				out = append(out, "\ufffd"...)
			} else {
				out = append(out, s[i:i+size]...)
			}
			i += size
			continue
		}
		switch {
		case c == '"' || c == '\\':
			out = append(out, '\\', c)
		case c == '\n':
			out = append(out, '\\', 'n')
		case c == '\r':
			out = append(out, '\\', 'r')
		case c == '\t':
			out = append(out, '\\', 't')
		case c == '\b':
			out = append(out, '\\', 'b')
		case c == '\f':
			out = append(out, '\\', 'f')
		case c < 0x20:
			out = append(out, '\\', 'u', '0', '0', hexdigits[c>>4], hexdigits[c&0xf])
		default:
			out = append(out, c)
		}
		i++
	}
	return append(out, '"')
}

func TestAppendStringMatchesOracle(t *testing.T) {
	for _, s := range []string{"", "12345678", "1234567\"", "abcdefgh\x1f", "\x80bcdefgh", "abcdefghijklmnop\\", "éééééééé\n", strings.Repeat("x", 33)} {
		if got, want := string(AppendString(nil, s)), string(appendStringOracle(nil, s)); got != want {
			t.Errorf("%q: got %s, want %s", s, got, want)
		}
		if got, want := string(AppendBytes(nil, []byte(s))), string(appendStringOracle(nil, s)); got != want {
			t.Errorf("bytes %q: got %s, want %s", s, got, want)
		}
	}
}

func TestPlainWordNeverSaysTrueWrongly(t *testing.T) {
	for _, bad := range []byte{'"', '\\', 0, 0x1f} {
		for pos := range 8 {
			w := []byte("abcdefgh")
			w[pos] = bad
			if plainWord(binary.LittleEndian.Uint64(w)) {
				t.Errorf("byte %#x at %d passed", bad, pos)
			}
		}
	}
	if !plainWord(binary.LittleEndian.Uint64([]byte("abc\xffé!~"))) {
		t.Error("plain bytes were refused")
	}
}

// FuzzAppendString checks that the output is valid JSON and the
// word-at-a-time encoder matches the oracle.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "a\"b\n\xff", "plain ascii text!", "q\"b\\", "\n\x00\x1f", "é ☃ 😀", "bad\xffutf8", "trail\xe2\x98", "\xf0\x9f\x98\x80x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !json.Valid(AppendString(nil, s)) {
			t.Fatalf("invalid JSON for %q", s)
		}
		if got, want := AppendString(nil, s), appendStringOracle(nil, s); string(got) != string(want) {
			t.Fatalf("%q: got %s, want %s", s, got, want)
		}
		if got, want := AppendBytes(nil, []byte(s)), appendStringOracle(nil, s); string(got) != string(want) {
			t.Fatalf("bytes %q: got %s, want %s", s, got, want)
		}
	})
}

func BenchmarkAppendString32(b *testing.B) {
	s := strings.Repeat("0123456789abcdef", 2)
	buf := make([]byte, 0, 64)
	for b.Loop() {
		buf = AppendString(buf[:0], s)
	}
}
