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
		{"IDOfAnUnfinishedEventDoesNotCount", "id: 1\n\nid: 2\ndata: x\n", []string{"message|x"}, "1", false},
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
			if errors.Is(err, ErrBound) != tc.bound || (!tc.bound && err != io.EOF) {
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

// refEvents is a plain reading of the event-stream rules over a whole
// input, the model FuzzEventStream holds the streaming parser to.
func refEvents(input []byte, maxLine, maxData int) (events []string, lastID string, bound bool) {
	lines := bytes.Split(input, []byte{'\n'})
	rest := lines[len(lines)-1] // unterminated: dropped, unless past the bound
	lines = lines[:len(lines)-1]
	var data []byte
	typ, idBuf, hasID := "", "", false
	dispatch := func() {
		if typ == "" {
			typ = "message"
		}
		events = append(events, typ+"|"+string(data[:len(data)-1]))
		data, typ = nil, ""
	}
	for i, line := range lines {
		if len(line) > maxLine {
			return events, lastID, true
		}
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if i == 0 {
			line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf"))
		}
		switch {
		case len(line) == 0:
			if hasID {
				lastID = idBuf
			}
			if len(data) == 0 {
				typ = ""
				continue
			}
			dispatch()
			continue
		case line[0] == ':':
			continue
		}
		field, value, found := bytes.Cut(line, []byte{':'})
		if found {
			value = bytes.TrimPrefix(value, []byte{' '})
		}
		switch string(field) {
		case "data":
			if len(data)+len(value) > maxData {
				return events, lastID, true
			}
			data = append(append(data, value...), '\n')
		case "event":
			typ = string(value)
		case "id":
			if !bytes.Contains(value, []byte{0}) && len(value) <= maxEventID {
				idBuf, hasID = string(value), true
			}
		}
	}
	if len(rest) > maxLine {
		return events, lastID, true
	}
	if len(data) > 0 {
		dispatch()
	}
	return events, lastID, false
}

// FuzzEventStream holds the streaming event-stream parser, over a small
// read buffer and reads of any size, to the plain model refEvents: same
// events, same last event ID, a bound exceeded exactly when the model says.
func FuzzEventStream(f *testing.F) {
	f.Add([]byte(": c\n\nevent: message\nid: 7\ndata: {\"a\":\ndata: 1}\n\nretry: 10\n"), false)
	f.Add([]byte("\xef\xbb\xbfdata: x\r\n\r\ndata: "+strings.Repeat("y", 40)+"\n\n"), true)
	f.Add([]byte("id: 1\ndata: \n\nid: 2\ndata: z"), true)
	f.Fuzz(func(t *testing.T, input []byte, oneByte bool) {
		const maxLine, maxData = 48, 64
		var r io.Reader = bytes.NewReader(input)
		if oneByte {
			r = iotest.OneByteReader(r)
		}
		s := newSSEReader(r, maxLine, maxData, 16)
		got, err := readEvents(s)
		want, lastID, bound := refEvents(input, maxLine, maxData)
		if bound != errors.Is(err, ErrBound) || (!bound && err != io.EOF) {
			t.Fatalf("error %v, model bound %v", err, bound)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("events %q, model %q", got, want)
		}
		if !bound && s.lastID != lastID {
			t.Fatalf("last ID %q, model %q", s.lastID, lastID)
		}
		for _, e := range got {
			if _, data, _ := strings.Cut(e, "|"); len(data) > maxData {
				t.Fatalf("event data of %d bytes past the bound", len(data))
			}
		}
	})
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
