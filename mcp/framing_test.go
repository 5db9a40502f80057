package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/pabloagent/pablo/internal/sse"
)

// readEvents drains an sseReader into "type|data" strings.
func readEvents(s *sseReader) (events []string, err error) {
	for {
		typ, data, err := s.next()
		if err != nil {
			return events, err
		}
		events = append(events, typ+"|"+string(data))
	}
}

func TestEventStreamParsing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		input  string
		want   []string
		lastID string
		bound  bool
	}{
		{"CommentsAreSkipped", ": hi\n:\ndata: a\n\n", []string{"message|a"}, "", false},
		{"DataLinesJoinWithNewlines", "data: a\ndata:b\ndata\n\n", []string{"message|a\nb\n"}, "", false},
		{"OneLeadingSpaceIsDropped", "data:  two\n\n", []string{"message| two"}, "", false},
		{"EventTypeIsKept", "event: note\ndata: x\n\n", []string{"note|x"}, "", false},
		{"EmptyDataLineStillDispatches", "id: 5\ndata: \n\n", []string{"message|"}, "5", false},
		{"IDWithoutDataStillCounts", "id: 6\n\n", nil, "6", false},
		{"IDOfAnUnfinishedEventDoesNotCount", "id: 1\n\nid: 2\ndata: x\n", nil, "1", false},
		{"IDWithNULIsIgnored", "id: a\x00b\ndata: x\n\n", []string{"message|x"}, "", false},
		{"CRLFLines", "data: x\r\n\r\n", []string{"message|x"}, "", false},
		{"ByteOrderMarkIsDropped", "\xef\xbb\xbfdata: x\n\n", []string{"message|x"}, "", false},
		{"UnknownFieldsAreIgnored", "foo: bar\ndata: x\n\n", []string{"message|x"}, "", false},
		{"DataAtTheBound", "data: " + strings.Repeat("d", 16) + "\n\n", []string{"message|" + strings.Repeat("d", 16)}, "", false},
		{"DataOnePastTheBound", "data: " + strings.Repeat("d", 17) + "\n\n", nil, "", true},
		{"DataPastTheBoundAcrossLines", "data: 12345678\ndata: 12345678\n\n", nil, "", true},
		{"LineOnePastTheBound", "data: " + strings.Repeat("d", 25) + "\n\n", nil, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSSEReader(strings.NewReader(tc.input), 30, 16, 16)
			got, err := readEvents(s)
			// The unfinished event is not delivered: its stream ended
			// inside it (the rule internal/sse defends).
			end := error(io.EOF)
			if strings.HasPrefix(tc.name, "IDOfAnUnfinished") {
				end = sse.ErrUnterminated
			}
			if errors.Is(err, ErrBound) != tc.bound || (!tc.bound && err != end) {
				t.Fatalf("error %v, want bound %v", err, tc.bound)
			}
			if !slices.Equal(got, tc.want) || s.lastID != tc.lastID {
				t.Fatalf("events %q last ID %q, want %q %q", got, s.lastID, tc.want, tc.lastID)
			}
		})
	}
}

func TestEventStreamRetry(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		value string
		ok    bool
		ms    int
	}{{"500", true, 500}, {"0", true, 0}, {"+5", false, 0}, {"-5", false, 0}, {"5s", false, 0}, {"", false, 0}, {"99999999999", false, 0}} {
		s := newSSEReader(strings.NewReader("retry: "+tc.value+"\n\n"), 64, 64, 16)
		readEvents(s)
		if s.hasRetry != tc.ok || (tc.ok && s.retry.Milliseconds() != int64(tc.ms)) {
			t.Errorf("retry %q: %v %v", tc.value, s.hasRetry, s.retry)
		}
	}
}

// refFrames is the model of stdio framing: complete lines, "\r" dropped,
// empty ones skipped, a line past max ends the stream.
func refFrames(input []byte, max int) (frames []string, bound bool) {
	lines := bytes.Split(input, []byte{'\n'})
	for _, line := range lines[:len(lines)-1] {
		if len(line) > max {
			return frames, true
		}
		if line = bytes.TrimSuffix(line, []byte{'\r'}); len(line) > 0 {
			frames = append(frames, string(line))
		}
	}
	return frames, len(lines[len(lines)-1]) > max
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// FuzzStdioFrames holds stdio frame decoding to the model refFrames, and
// dispatches every frame as a server's stdout would: nothing panics, a
// response reaches only the request it answers, and every answer to a
// server request is one JSON object on one line.
func FuzzStdioFrames(f *testing.F) {
	f.Add([]byte("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n"), false)
	f.Add([]byte("{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"method\":\"ping\"}\r\n\n{\"id\":1.0,\"error\":{\"code\":1,\"message\":\"m\"}}\n"), true)
	f.Add([]byte("{\"method\":\"notifications/progress\",\"params\":{\"progressToken\":1}}\n"+strings.Repeat("z", 80)+"\n"), false)
	f.Fuzz(func(t *testing.T, input []byte, oneByte bool) {
		const max = 64
		var r io.Reader = bytes.NewReader(input)
		if oneByte {
			r = iotest.OneByteReader(r)
		}
		fr := newFrameReader(r, max, 16)
		var got []string
		var err error
		for {
			var frame []byte
			if frame, err = fr.next(); err != nil {
				break
			}
			got = append(got, string(frame))
		}
		want, bound := refFrames(input, max)
		if bound != errors.Is(err, ErrBound) || (!bound && err != io.EOF) {
			t.Fatalf("error %v, model bound %v", err, bound)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("frames %q, model %q", got, want)
		}

		var answers bytes.Buffer
		ch := make(chan reply, 1)
		c := &lineConn{w: nopWriteCloser{&answers}, pending: map[int64]chan reply{1: ch}, done: make(chan struct{}), onNote: func(string, json.RawMessage) {}}
		for _, frame := range got {
			c.dispatch([]byte(frame))
		}
		if len(c.pending) == 0 && len(ch) != 1 {
			t.Fatal("request 1 was forgotten without its response")
		}
		for _, line := range strings.Split(strings.TrimSuffix(answers.String(), "\n"), "\n") {
			if line == "" {
				continue
			}
			var m map[string]json.RawMessage
			if err := json.Unmarshal([]byte(line), &m); err != nil || m["id"] == nil {
				t.Fatalf("answer %q is not a JSON-RPC response: %v", line, err)
			}
		}
	})
}
