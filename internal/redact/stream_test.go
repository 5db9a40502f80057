package redact

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pabloagent/pablo/internal/jsonx"
)

// streamSet is a Set with known values of awkward shapes (quotes,
// backslashes, a TAB, U+2028, one value a prefix of another) and a
// deployment pattern without a literal prefix.
func streamSet(t testing.TB) *Set {
	s := &Set{}
	for _, v := range []string{"tok-4242-secret", `pa"ss\word`, "tab\tsecret", "line\u2028sep", "abcd", "abcdefgh"} {
		s.Add(v)
	}
	p, err := NewPattern("ssn", `\b[0-9]{3}-[0-9]{2}-[0-9]{4}\b`)
	if err != nil {
		t.Fatal(err)
	}
	s.AddPatterns(p)
	return s
}

// streamed masks text cut at the given offsets through one Stream.
func streamed(s *Set, text string, cuts []int) (string, int) {
	st := s.NewStream()
	var out strings.Builder
	n, last := 0, 0
	for _, c := range append(cuts, len(text)) {
		c = min(max(c, last), len(text))
		o, k := st.WriteString(text[last:c])
		out.WriteString(o)
		n += k
		last = c
	}
	o, k := st.Flush()
	out.WriteString(o)
	return out.String(), n + k
}

func streamCorpus() []string {
	var texts []string
	for _, c := range suspectedSecrets {
		texts = append(texts, "x "+c.text+" y", c.text)
	}
	for _, c := range userinfoURLs {
		texts = append(texts, "see "+c.text+"!")
	}
	texts = append(texts, nearMisses...)
	texts = append(texts,
		"value tok-4242-secret twice tok-4242-secret",
		`quoted pa"ss\word and tab`+"\tsecret and line\u2028sep",
		"abcdefgh abcd abcdefg abc", "ssn 078-05-1120 and 078-05-11200",
		"-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA0Z3VS5JJcds3xfn\n(no end marker)",
	)
	return texts
}

// Masking a text split at any point, or at many, gives what masking it
// whole gives: no secret escapes a chunk boundary, none is masked twice.
func TestStreamSplitAnywhereMasksLikeWhole(t *testing.T) {
	s := streamSet(t)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, text := range streamCorpus() {
		want, wn := s.MaskString(text)
		for i := 0; i <= len(text); i++ {
			if got, n := streamed(s, text, []int{i}); got != want || n != wn {
				t.Fatalf("%q cut at %d: got %q (%d), want %q (%d)", text, i, got, n, want, wn)
			}
		}
		for range 20 {
			cuts := make([]int, 1+rng.IntN(8))
			for i := range cuts {
				cuts[i] = rng.IntN(len(text) + 1)
			}
			if got, n := streamed(s, text, cuts); got != want || n != wn {
				t.Fatalf("%q cut at %v: got %q (%d), want %q (%d)", text, cuts, got, n, want, wn)
			}
		}
	}
}

// A chunk that cannot start a secret is released at once and whole; only
// a tail that could still be one is held.
func TestStreamHoldsOnlyWhatCouldStartASecret(t *testing.T) {
	var s Set
	s.Add("tok-4242-secret")
	st := s.NewStream()
	for _, c := range []struct{ in, out string }{
		{"plain words, nothing to hold. ", "plain words, nothing to hold. "},
		{"the value is tok-42", "the value is "},
		{"42-secret, done", "[redacted], done"},
		{" ask ", " ask "},
		{"then sk", "then "},
		{"etch", "sketch"},
		{" AKIAIOSF", " "},
		{"ODNN7EXAMPLE\n", "[redacted]\n"},
	} {
		if got, _ := st.WriteString(c.in); got != c.out {
			t.Fatalf("%q released %q, want %q (pending %d)", c.in, got, c.out, st.Pending())
		}
	}
	if st.Pending() != 0 {
		t.Fatalf("%d bytes still held", st.Pending())
	}
	// A long run of token bytes after a prefix is held at most as long as
	// a match could be.
	st.WriteString("sk-" + strings.Repeat("a", 300))
	if p := st.Pending(); p != 303 {
		t.Fatalf("%d bytes held", p)
	}
	st.WriteString(strings.Repeat("a", MaxPatternBytes))
	if p := st.Pending(); p > MaxPatternBytes {
		t.Fatalf("%d bytes held", p)
	}
}

// A value is found however JSON escaped it, and the masked JSON stays valid.
func TestMaskJSONFindsEscapedValues(t *testing.T) {
	s := streamSet(t)
	for _, v := range []string{`pa"ss\word`, "tab\tsecret", "line\u2028sep", "tok-4242-secret"} {
		std, _ := json.Marshal(map[string]any{"output": "got " + v + " here", v: 1})
		hand := jsonx.AppendString(nil, "got "+v)
		uni := []byte(`"got \u0074ok-4242-secret"`)
		for _, raw := range [][]byte{std, hand, uni} {
			out, n := s.MaskJSON(raw)
			if n == 0 || !json.Valid(out) || strings.Contains(decode(t, out), v) {
				t.Errorf("%q: masked %d in %s", v, n, out)
			}
		}
	}
	plain := []byte(`{"output":"nothing here","n":1}`)
	if out, n := s.MaskJSON(plain); n != 0 || &out[0] != &plain[0] {
		t.Fatalf("changed %s", out)
	}
}

func decode(t *testing.T, raw []byte) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(v)
	var sb strings.Builder
	// Keys and values both, decoded.
	sb.Write(b)
	walk(v, &sb)
	return sb.String()
}

func walk(v any, sb *strings.Builder) {
	switch x := v.(type) {
	case string:
		sb.WriteString(x)
	case map[string]any:
		for k, e := range x {
			sb.WriteString(k)
			walk(e, sb)
		}
	case []any:
		for _, e := range x {
			walk(e, sb)
		}
	}
}

// FuzzStreamMasksLikeWhole: masking a text in chunks equals masking it
// whole, wherever it is cut.
func FuzzStreamMasksLikeWhole(f *testing.F) {
	for _, text := range streamCorpus() {
		f.Add(text, uint16(len(text)/2), uint16(len(text)/3))
	}
	s := streamSet(f)
	f.Fuzz(func(t *testing.T, text string, a, b uint16) {
		want, wn := s.MaskString(text)
		got, n := streamed(s, text, []int{int(a) % (len(text) + 1), int(b) % (len(text) + 1)})
		if got != want || n != wn {
			t.Fatalf("%q cut at %d, %d: got %q (%d), want %q (%d)", text, a, b, got, n, want, wn)
		}
	})
}

// BenchmarkStreamDelta is the cost a text delta pays on its way to the
// sink: a 32-byte chunk that cannot start a secret, and one of English.
func BenchmarkStreamDelta(b *testing.B) {
	var s Set
	s.Add("tok-4242-secret")
	for _, c := range []struct{ name, text string }{{"x32", strings.Repeat("x", 32)}, {"y32", strings.Repeat("y", 32)}, {"words32", "the risk desk asked a key: go e"}} {
		b.Run(c.name, func(b *testing.B) {
			st := s.NewStream()
			b.ReportAllocs()
			for b.Loop() {
				st.WriteString(c.text)
			}
		})
	}
}

// BenchmarkBuiltins is the one-time cost of compiling the built-in
// detectors (paid at a process's first masking).
func BenchmarkBuiltins(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		for _, sp := range builtinSpecs {
			if _, err := newPattern(sp.name, sp.expr, sp.group); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// FuzzMaskJSONMasksTheDecodedText: masking a JSON string gives valid JSON
// whose value is the masked decoded text.
func FuzzMaskJSONMasksTheDecodedText(f *testing.F) {
	for _, text := range streamCorpus() {
		f.Add(text)
	}
	s := streamSet(f)
	f.Fuzz(func(t *testing.T, text string) {
		if !utf8.ValidString(text) {
			return // encoding/json would change it before masking
		}
		raw, _ := json.Marshal(map[string]string{"output": text})
		out, n := s.MaskJSON(raw)
		var got map[string]string
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("%s is not JSON: %v", out, err)
		}
		want, wn := s.MaskString(text)
		if got["output"] != want || n != wn {
			t.Fatalf("%q: got %q (%d), want %q (%d)", text, got["output"], n, want, wn)
		}
	})
}

// A stream cut short releases its held-back tail as one mask: the start of
// a secret whose rest was dropped is never released in clear.
func TestCutStreamMasksItsHeldBackStart(t *testing.T) {
	var s Set
	s.Add("Tk9-Qm4Lz7-Wp2Vx")
	st := s.NewStream()
	out, _ := st.WriteString("ok Tk9-Qm")
	if out != "ok " || st.Pending() != 6 {
		t.Fatalf("released %q, holding %d", out, st.Pending())
	}
	if out, n := st.Cut(); out != Mask || n != 1 || st.Pending() != 0 {
		t.Fatalf("cut released %q with %d masks", out, n)
	}
	if out, n := st.Cut(); out != "" || n != 0 {
		t.Fatalf("an empty cut released %q", out)
	}
}

// MaskCut masks a text cut short: its secrets, and a tail that could still
// be the start of one; a text with neither is returned as it is.
func TestMaskCutMasksTheStartOfACutSecret(t *testing.T) {
	var s Set
	s.Add("Tk9-Qm4Lz7-Wp2Vx")
	for _, c := range []struct{ in, want string }{
		{"ok Tk9-Qm4Lz7-Wp2Vx and Tk9-Q", "ok [redacted] and [redacted]"},
		{"key AKIAIOSFOD", "key [redacted]"},
		{"nothing here", "nothing here"},
	} {
		if got, _ := s.MaskCut(c.in); got != c.want {
			t.Errorf("MaskCut(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// MaskWindow masks the part of a secret a page's edge cuts, found by the
// text beyond the edge.
func TestMaskWindowMasksWhatThePageEdgesCut(t *testing.T) {
	var s Set
	s.Add("Tk9-Qm4Lz7-Wp2Vx")
	whole := []byte("key: Tk9-Qm4Lz7-Wp2Vx id AKIAIOSFODNN7EXAMPLE\n")
	for _, c := range []struct {
		from, to int
		want     string
	}{
		{0, 10, "key: [redacted]"}, {10, 30, "[redacted] id [redacted]"}, {30, len(whole), "[redacted]\n"}, {21, 25, " id "},
	} {
		if got, _ := s.MaskWindow(whole, c.from, c.to); got != c.want {
			t.Errorf("MaskWindow(%d, %d) = %q, want %q", c.from, c.to, got, c.want)
		}
	}
}
