package termtext

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// hostile holds what a terminal acts on: an OSC 52 clipboard write, a
// clear screen, a C1 CSI, a bidi override and isolate, a zero-width space,
// a line separator, DEL and a carriage return; around text that must pass
// (a multi-byte letter, an emoji, a tab, a newline, a no-break space).
const hostile = "é\x1b]52;c;cHduZWQ=\x07 \x1b[2J\u009b31m\u202eevil\u2066\u200b\u2028\x7f\r😀\tok\n\u00a0end"

// TestTerminalEscapesEveryControl: Printable and AppendPrintable leave no
// rune a terminal could act on: no C0 (but newline and tab, with lines),
// no C1, no format character, no line or paragraph separator; each is
// shown as its escape.
func TestTerminalEscapesEveryControl(t *testing.T) {
	for _, lines := range []bool{false, true} {
		got := string(AppendPrintable(nil, hostile, lines))
		for _, r := range got {
			if unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp, unicode.Co, unicode.Cs) && !(lines && (r == '\n' || r == '\t')) {
				t.Errorf("lines=%v: %U passed: %q", lines, r, got)
			}
		}
		for _, w := range []string{`\u001b]52;c;cHduZWQ=\u0007`, `\u001b[2J`, `\u009b31m`, `\u202eevil\u2066\u200b\u2028\u007f\u000d`, "é", "😀"} {
			if !strings.Contains(got, w) {
				t.Errorf("lines=%v: %q does not show %q", lines, got, w)
			}
		}
		// Every bidi control: embeddings, overrides, isolates, marks.
		bidi := "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
		if b := string(AppendPrintable(nil, bidi, lines)); b != `\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c` {
			t.Errorf("lines=%v: the bidi controls show as %q", lines, b)
		}
		if lines != strings.Contains(got, "\tok\n\u00a0end") {
			t.Errorf("lines=%v: newline, tab and no-break space: %q", lines, got)
		}
	}
	if got := Printable("a\nb\U000e0001\xff"); got != `a\u000ab\U000e0001`+"\ufffd" {
		t.Errorf("Printable: %q", got)
	}
}

// TestStreamEscapesAcrossPieces: a text cut into pieces anywhere,
// even inside a rune or an escape sequence, comes out of Stream
// exactly as the whole text escaped at once; a rune left incomplete at the
// end reads as U+FFFD.
func TestStreamEscapesAcrossPieces(t *testing.T) {
	text := hostile + "\xff\xe2\x28" // invalid bytes stay invalid
	want := string(AppendPrintable(nil, text, true))
	for i := 0; i <= len(text); i++ {
		for j := i; j <= len(text); j++ {
			var tt Stream
			got := tt.Append(nil, text[:i])
			got = tt.Append(got, text[i:j])
			got = tt.Append(got, text[j:])
			got = tt.Flush(got)
			if string(got) != want {
				t.Fatalf("cut at %d and %d: %q, want %q", i, j, got, want)
			}
		}
	}
	var tt Stream
	got := tt.Append(nil, "a\xf0\x9f")
	if string(got) != "a" {
		t.Fatalf("an incomplete rune was not held: %q", got)
	}
	if got = tt.Flush(got); string(got) != "a\ufffd\ufffd" || !utf8.Valid(got) {
		t.Fatalf("flush: %q", got)
	}
}

func FuzzStream(f *testing.F) {
	f.Add(hostile, 3)
	f.Fuzz(func(t *testing.T, s string, cut int) {
		if cut < 0 || cut > len(s) {
			cut = len(s) / 2
		}
		var tt Stream
		got := tt.Flush(tt.Append(tt.Append(nil, s[:cut]), s[cut:]))
		if want := AppendPrintable(nil, s, true); string(got) != string(want) {
			t.Fatalf("%q cut at %d: %q, want %q", s, cut, got, want)
		}
		for _, r := range string(got) {
			if unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp, unicode.Co, unicode.Cs) && r != '\n' && r != '\t' {
				t.Fatalf("%U passed", r)
			}
		}
	})
}

// TestStreamInJSONKeepsTheDocument: a JSON document escaped with
// Stream.JSON, in any pieces, holds no rune a terminal acts on and
// decodes to the same values: each escape is a JSON string escape, a rune
// above the BMP a surrogate pair.
func TestStreamInJSONKeepsTheDocument(t *testing.T) {
	value := map[string]any{"text": hostile + "\U000e0001tag\U0010fffd", "list": []any{"\u202e", "plain"}}
	doc, err := json.MarshalIndent(value, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	for cut := 0; cut <= len(doc); cut++ {
		tt := Stream{JSON: true}
		got := tt.Flush(tt.Append(tt.Append(nil, string(doc[:cut])), string(doc[cut:])))
		for _, r := range string(got) {
			if unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp, unicode.Co, unicode.Cs) && r != '\n' {
				t.Fatalf("cut at %d: %U passed: %s", cut, r, got)
			}
		}
		var back map[string]any
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("cut at %d: %v: %s", cut, err, got)
		}
		if !reflect.DeepEqual(back, value) {
			t.Fatalf("cut at %d: decodes to %q, want %q", cut, back, value)
		}
		if cut == 0 && !strings.Contains(string(got), `tag\udbff\udffd`) {
			t.Errorf("a rune above the BMP is not a surrogate pair: %s", got)
		}
	}
}
