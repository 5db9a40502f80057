package sse

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
)

// model reads a whole input by the standard's rules, plainly: split into
// lines first, then interpret them. It is what FuzzReader holds the
// streaming Reader to.
func model(input []byte, opts Options) (events []string, lastID string, end string) {
	var lines [][]byte
	rest := input
	for {
		i := bytes.IndexAny(rest, "\r\n")
		if i < 0 {
			break
		}
		lines = append(lines, rest[:i])
		if rest[i] == '\r' && i+1 < len(rest) && rest[i+1] == '\n' {
			i++
		}
		rest = rest[i+1:]
	}
	var data []byte
	typ, idBuf, pending, n := "", "", false, 0
	for i, line := range lines {
		if len(line) > opts.MaxLine {
			return events, lastID, "line"
		}
		if i == 0 {
			line = bytes.TrimPrefix(line, bom)
		}
		switch {
		case len(line) == 0:
			pending, lastID = false, idBuf
			if len(data) == 0 {
				typ = ""
				continue
			}
			if opts.MaxEvents > 0 && n >= opts.MaxEvents {
				return events, lastID, "events"
			}
			n++
			events = append(events, typ+"|"+string(data[:len(data)-1]))
			data, typ = nil, ""
			continue
		case line[0] == ':':
			continue
		}
		pending = true
		field, value, found := bytes.Cut(line, []byte{':'})
		if found {
			value = bytes.TrimPrefix(value, []byte{' '})
		}
		switch string(field) {
		case "data":
			if len(typ)+len(data)+len(value) > opts.MaxEvent {
				return events, lastID, "event"
			}
			data = append(append(data, value...), '\n')
		case "event":
			if len(value)+max(len(data)-1, 0) > opts.MaxEvent {
				return events, lastID, "event"
			}
			typ = string(value)
		case "id":
			if !bytes.Contains(value, []byte{0}) && len(value) <= MaxIDBytes {
				idBuf = string(value)
			}
		}
	}
	if len(rest) > opts.MaxLine {
		return events, lastID, "line"
	}
	if len(rest) > 0 || pending {
		return events, lastID, "unterminated"
	}
	return events, lastID, "eof"
}

// FuzzReader holds the streaming reader, over a small read buffer and reads
// of any size, to the plain model: the same events, the same last event
// ID, the same end (io.EOF, ErrUnterminated or the same bound), and no
// event's data past its bound.
func FuzzReader(f *testing.F) {
	f.Add([]byte(": c\n\nevent: message\nid: 7\ndata: {\"a\":\ndata: 1}\n\nretry: 10\n"), false, uint8(0))
	f.Add([]byte("\xef\xbb\xbfdata: x\r\n\r\ndata: "+strings.Repeat("y", 40)+"\n\n"), true, uint8(0))
	f.Add([]byte("id: 1\ndata: \n\nid: 2\ndata: z"), true, uint8(2))
	f.Add([]byte("data: a\r\rdata: b\r\n\r\n\r"), true, uint8(1))
	f.Fuzz(func(t *testing.T, input []byte, oneByte bool, maxEvents uint8) {
		opts := Options{MaxLine: 48, MaxEvent: 64, MaxEvents: int(maxEvents % 4), BufferSize: 16}
		var src io.Reader = bytes.NewReader(input)
		if oneByte {
			src = iotest.OneByteReader(src)
		}
		r := NewReader(src, opts)
		got, err := drain(r)
		want, lastID, end := model(input, opts)
		var be *BoundError
		switch {
		case errors.As(err, &be):
			if be.Bound != end {
				t.Fatalf("end %v, model %s", err, end)
			}
		case errors.Is(err, ErrUnterminated):
			if end != "unterminated" {
				t.Fatalf("end %v, model %s", err, end)
			}
		case err == io.EOF:
			if end != "eof" {
				t.Fatalf("end io.EOF, model %s", end)
			}
		default:
			t.Fatalf("end %v", err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("events %q, model %q", got, want)
		}
		if r.LastEventID() != lastID {
			t.Fatalf("last ID %q, model %q", r.LastEventID(), lastID)
		}
		for _, e := range got {
			if typ, data, _ := strings.Cut(e, "|"); len(typ)+len(data) > opts.MaxEvent {
				t.Fatalf("an event of %d bytes past the bound", len(typ)+len(data))
			}
		}
		if opts.MaxEvents > 0 && len(got) > opts.MaxEvents {
			t.Fatalf("%s events past the bound %d", strconv.Itoa(len(got)), opts.MaxEvents)
		}
	})
}
