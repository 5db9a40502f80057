package fstools

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"
)

// naiveMatches is the specification the streaming scanner must agree with:
// the whole content in memory, split into lines.
func naiveMatches(content []byte, q string, textCap int) (text bool, out []found) {
	if bytes.IndexByte(content, 0) >= 0 || !utf8.Valid(content) {
		return false, nil
	}
	lines := strings.Split(string(content), "\n")
	endsNL := bytes.HasSuffix(content, []byte("\n"))
	if endsNL || len(content) == 0 {
		lines = lines[:len(lines)-1]
	}
	for i, line := range lines {
		if i < len(lines)-1 || endsNL {
			line = strings.TrimSuffix(line, "\r")
		}
		if !strings.Contains(line, q) {
			continue
		}
		m := found{line: int64(i + 1), text: line}
		if len(line) > textCap {
			b := []byte(line[:textCap])
			m.text, m.truncated = string(b[:len(b)-incompleteTail(b)]), true
			m.context = []byte(line[:min(len(line), textCap+cutLookahead)])
		}
		out = append(out, m)
	}
	return true, out
}

func streamMatches(r io.Reader, q string, chunk, textCap, room int) (bool, []found, error) {
	s := newLineScanner([]byte(q), chunk, textCap)
	s.reset(room)
	text, err := s.scan(r, func(int) error { return nil })
	return text, append([]found(nil), s.found...), err
}

func TestStreamingMatcherAgreesWithNaive(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 50) + "needle" + strings.Repeat("x", 70)
	tests := []struct {
		name, content, q string
	}{
		{"match across chunk boundary", strings.Repeat("a", 13) + "needle\n", "needle"},
		{"CR dropped before LF only", "needle\r\nneedle\r", "needle"},
		{"last line without LF", "a\nb needle", "needle"},
		{"empty lines counted", "\n\n\nneedle\n\n", "needle"},
		{"each line once", "needle needle needle\n", "needle"},
		{"long line truncated at a codepoint", long + "\n" + long, "needle"},
		{"multi-byte codepoint split by chunks", strings.Repeat("😀", 20) + "\n😀x\n", "😀x"},
		{"NUL late drops earlier matches", "needle\n" + strings.Repeat("z", 100) + "\x00", "needle"},
		{"invalid UTF-8 late drops earlier matches", "needle\n" + strings.Repeat("z", 100) + "\xff", "needle"},
		{"truncated codepoint at EOF is invalid", "needle\n\xe2\x82", "needle"},
		{"query longer than chunk", strings.Repeat("ab", 40) + "\n", strings.Repeat("ab", 20)},
	}
	for _, tt := range tests {
		for _, chunk := range []int{4, 7, 16, 64} {
			t.Run(fmt.Sprintf("%s/chunk=%d", tt.name, chunk), func(t *testing.T) {
				wantText, want := naiveMatches([]byte(tt.content), tt.q, 32)
				gotText, got, err := streamMatches(strings.NewReader(tt.content), tt.q, chunk, 32, 1<<30)
				if err != nil || gotText != wantText || fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("got %v %v %v\nwant %v %v", gotText, got, err, wantText, want)
				}
			})
		}
	}
}

func TestStreamingMatcherStopsCollectingAtRoom(t *testing.T) {
	t.Parallel()
	content := strings.Repeat("hit\n", 10) + "\x00"
	text, got, _ := streamMatches(strings.NewReader(content), "hit", 8, 16, 3)
	if text || len(got) != 0 {
		t.Fatalf("binary after room filled: %v %v", text, got)
	}
	text, got, _ = streamMatches(strings.NewReader(strings.Repeat("hit\n", 10)), "hit", 8, 16, 3)
	if !text || len(got) != 3 || got[2].line != 3 {
		t.Fatalf("%v %v", text, got)
	}
}

// FuzzSearchLine checks the streaming matcher against the naive one over
// arbitrary content, queries, chunk sizes, text caps and read patterns.
func FuzzSearchLine(f *testing.F) {
	f.Add([]byte("abc\nxabcx\r\nab\ncabc"), "abc", uint8(0), uint8(5), uint8(0))
	f.Add([]byte("😀😀\n😀x😀\n"), "😀x", uint8(1), uint8(3), uint8(1))
	f.Add([]byte("needle\n\x00"), "needle", uint8(9), uint8(200), uint8(2))
	f.Add([]byte(strings.Repeat("a", 300)+"b\n"), "aab", uint8(3), uint8(10), uint8(0))
	f.Fuzz(func(t *testing.T, content []byte, q string, chunkSeed, capSeed, readSeed uint8) {
		if q == "" || len(q) > 64 || strings.ContainsAny(q, "\n\r\x00") || !utf8.ValidString(q) {
			return
		}
		chunk := 4 + int(chunkSeed%60)
		textCap := 1 + int(capSeed%48)
		var r io.Reader = bytes.NewReader(content)
		switch readSeed % 3 {
		case 1:
			r = iotest.OneByteReader(r)
		case 2:
			r = iotest.HalfReader(r)
		}
		wantText, want := naiveMatches(content, q, textCap)
		gotText, got, err := streamMatches(r, q, chunk, textCap, 1<<30)
		if err != nil || gotText != wantText || fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
			t.Fatalf("chunk %d cap %d q %q content %q\ngot  %v %+v %v\nwant %v %+v", chunk, textCap, q, content, gotText, got, err, wantText, want)
		}
	})
}
