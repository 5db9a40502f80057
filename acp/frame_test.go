package acp

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"unicode/utf8"
)

// readAll reads every frame of input, returning the frames and the error
// that ended the input.
func readAll(input string, maxLine int, maxInput int64) ([]string, error) {
	fr := newFrameReader(strings.NewReader(input), maxLine, maxInput)
	var frames []string
	for {
		f, err := fr.next()
		if err != nil {
			return frames, err
		}
		frames = append(frames, string(f))
	}
}

func TestFrameReaderKeepsEachRule(t *testing.T) {
	obj := func(n int) string { return `{"a":"` + strings.Repeat("x", n-8) + `"}` } // n bytes
	cases := []struct {
		name   string
		input  string
		frames int
		rule   FrameRule // "" for io.EOF
	}{
		{"two frames", "{}\n{}\n", 2, ""},
		{"crlf", "{}\r\n", 1, ""},
		{"empty input", "", 0, ""},
		{"a frame at the bound", obj(64) + "\n", 1, ""},
		{"a frame at the bound with crlf", obj(64) + "\r\n", 1, ""},
		{"one byte past the bound", obj(65) + "\n", 0, FrameTooLong},
		{"one byte past the bound with crlf", obj(65) + "\r\n", 0, FrameTooLong},
		{"far past the bound, unterminated", obj(1000), 0, FrameTooLong},
		{"no final newline", "{}\n{}", 1, FrameUnterminated},
		{"invalid UTF-8", "{\"a\":\"\xff\"}\n", 0, FrameInvalidUTF8},
		{"batch", "[{}]\n", 0, FrameBatch},
		{"batch after space", "  [{}]\n", 0, FrameBatch},
		{"a string", "\"x\"\n", 0, FrameNotObject},
		{"an empty line", "\n", 0, FrameNotObject},
		{"garbage", "hello\n", 0, FrameNotObject},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			frames, err := readAll(tc.input, 64, 1<<20)
			if len(frames) != tc.frames {
				t.Fatalf("got %d frames %q, want %d", len(frames), frames, tc.frames)
			}
			if tc.rule == "" {
				if err != io.EOF {
					t.Fatalf("err = %v, want EOF", err)
				}
				return
			}
			var fe *FrameError
			if !errors.As(err, &fe) || fe.Rule != tc.rule || !errors.Is(err, ErrFrame) {
				t.Fatalf("err = %v, want rule %s", err, tc.rule)
			}
			if fe.Frame != int64(tc.frames+1) {
				t.Fatalf("frame = %d, want %d", fe.Frame, tc.frames+1)
			}
		})
	}
}

func TestFrameReaderBoundsTotalInput(t *testing.T) {
	input := strings.Repeat("{}\n", 10) // 30 bytes
	if frames, err := readAll(input, 64, 30); err != io.EOF || len(frames) != 10 {
		t.Fatalf("at the bound: %d frames, %v", len(frames), err)
	}
	frames, err := readAll(input, 64, 29)
	if !errors.Is(err, ErrInputLimit) || len(frames) != 9 {
		t.Fatalf("one byte past: %d frames, %v", len(frames), err)
	}
}

// The reference's bound itself: a 32 MiB frame is read, one byte more
// closes.
func TestFrameReaderAtTheReferenceBound(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 64 MiB")
	}
	at := `{"a":"` + strings.Repeat("x", DefaultMaxLine-8) + `"}`
	frames, err := readAll(at+"\n", DefaultMaxLine, DefaultMaxInput)
	if err != io.EOF || len(frames) != 1 || len(frames[0]) != DefaultMaxLine {
		t.Fatalf("at the bound: %d frames, %v", len(frames), err)
	}
	_, err = readAll(`{"a":"x`+at[6:]+"\n", DefaultMaxLine, DefaultMaxInput)
	var fe *FrameError
	if !errors.As(err, &fe) || fe.Rule != FrameTooLong {
		t.Fatalf("one past: %v", err)
	}
}

// FuzzFrameReader: the reader never panics, never yields a frame over the
// bound, and every frame it yields is valid UTF-8, starts an object, and
// was a line of the input.
func FuzzFrameReader(f *testing.F) {
	for _, s := range []string{"{}\n", "{}\r\n{\"a\":1}\n", "[]\n", "\xff\n", "{}", "\n\n", `{"jsonrpc":"2.0","id":1,"method":"initialize"}` + "\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, input []byte) {
		const maxLine = 32
		fr := newFrameReader(bytes.NewReader(input), maxLine, 1<<16)
		rest := input
		for {
			frame, err := fr.next()
			if err != nil {
				if err != io.EOF && !errors.Is(err, ErrFrame) && !errors.Is(err, ErrInputLimit) {
					t.Fatalf("unexpected error %v", err)
				}
				if err == io.EOF && len(rest) != 0 {
					t.Fatalf("EOF with %d bytes unread", len(rest))
				}
				return
			}
			if len(frame) > maxLine || !utf8.Valid(frame) || !bytes.HasPrefix(bytes.TrimLeft(frame, " \t\r\n"), []byte("{")) {
				t.Fatalf("bad frame %q", frame)
			}
			i := bytes.IndexByte(rest, '\n')
			if i < 0 || string(bytes.TrimSuffix(rest[:i], []byte("\r"))) != string(frame) {
				t.Fatalf("frame %q is not the next line of the input", frame)
			}
			rest = rest[i+1:]
		}
	})
}
