package providers

import (
	"errors"
	"io"
	"strings"
	"testing"
)

func readAll(t *testing.T, in string, maxFrame, maxFrames int) ([]Frame, error) {
	t.Helper()
	r := NewSSEReader(strings.NewReader(in), maxFrame, maxFrames)
	var out []Frame
	for {
		f, err := r.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, Frame{Event: f.Event, Data: append([]byte(nil), f.Data...)})
	}
}

func TestSSEFieldsAndLineEndings(t *testing.T) {
	cases := []struct {
		name, in string
		want     []string // event + "|" + data
	}{
		{"lf", "data: a\n\n", []string{"|a"}},
		{"crlf", "data: a\r\n\r\n", []string{"|a"}},
		{"cr", "data: a\r\rdata: b\r\r", []string{"|a", "|b"}},
		{"multi-line data joins with LF", "data: a\ndata: b\n\n", []string{"|a\nb"}},
		{"event name", "event: x\ndata: 1\n\n", []string{"x|1"}},
		{"no space after colon", "data:a\n\n", []string{"|a"}},
		{"comments and id and retry ignored", ": ping\nid: 7\nretry: 10\ndata: a\n\n", []string{"|a"}},
		{"event without data dispatches nothing", "event: x\n\ndata: a\n\n", []string{"|a"}},
		{"blank lines between frames", "\n\n\ndata: a\n\n\n", []string{"|a"}},
		{"empty data is a frame", "data:\n\n", []string{"|"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			frames, err := readAll(t, c.in, 1024, 100)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range frames {
				got = append(got, f.Event+"|"+string(f.Data))
			}
			if strings.Join(got, ",") != strings.Join(c.want, ",") {
				t.Fatalf("got %q want %q", got, c.want)
			}
		})
	}
}

func TestSSEEndInsideAFrameIsTruncated(t *testing.T) {
	for _, in := range []string{"data: a\n", "data: a", "event: x\n", "data: a\n\ndata: b"} {
		if _, err := readAll(t, in, 1024, 100); !errors.Is(err, ErrTruncated) {
			t.Fatalf("%q: want ErrTruncated, got %v", in, err)
		}
	}
}

func TestSSEFrameBoundAtAndPastTheLimit(t *testing.T) {
	at := "data: " + strings.Repeat("x", 16) + "\n\n"
	if _, err := readAll(t, at, 16, 10); err != nil {
		t.Fatalf("at the bound: %v", err)
	}
	if _, err := readAll(t, at, 15, 10); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("past the bound: %v", err)
	}
	// Many short data lines add up to one frame.
	lines := strings.Repeat("data: xx\n", 10) + "\n"
	if _, err := readAll(t, lines, 29, 10); err != nil {
		t.Fatalf("joined at the bound: %v", err)
	}
	if _, err := readAll(t, lines, 28, 10); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("joined past the bound: %v", err)
	}
	// A comment line longer than any frame is refused too.
	if _, err := readAll(t, ":"+strings.Repeat("x", 100)+"\n", 16, 10); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("long comment: %v", err)
	}
}

func TestSSEFrameCountAtAndPastTheLimit(t *testing.T) {
	in := strings.Repeat("data: a\n\n", 3)
	if _, err := readAll(t, in, 16, 3); err != nil {
		t.Fatalf("at the bound: %v", err)
	}
	if _, err := readAll(t, in, 16, 2); !errors.Is(err, ErrTooManyFrames) {
		t.Fatalf("past the bound: %v", err)
	}
}

func TestCostIsExactAndRoundedUpOnce(t *testing.T) {
	cases := []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"0", 0, true}, {"0.000001", 1, true}, {"0.0000010000001", 2, true}, {"1", 1_000_000, true},
		{"0.0000123401", 13, true}, {"1.5e-5", 15, true}, {"15E-6", 15, true}, {"1e-7", 1, true}, {"2e3", 2_000_000_000, true},
		{"18446744073709.551615", 18446744073709551615, true}, {"18446744073709.551616", 0, false},
		{"-0.1", 0, false}, {"abc", 0, false}, {"1e999999999", 0, false}, {"01", 0, false}, {"1.", 0, false},
		{"", 0, false}, {"NaN", 0, false}, {strings.Repeat("1", 65), 0, false},
	}
	for _, c := range cases {
		got, err := CostMicroUSD(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("CostMicroUSD(%q) = %d, %v; want %d ok=%v", c.in, got, err, c.want, c.ok)
		}
	}
}
