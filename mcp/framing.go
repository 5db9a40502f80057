package mcp

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
	"time"
)

// Bounds of the Streamable HTTP event streams, beside MaxHTTPStreamBytes
// for a whole response.
const (
	// maxEventLine bounds one line of an event stream: a data line holding
	// a whole frame, and its field name.
	maxEventLine = MaxFrameBytes + 64
	// maxEventID bounds an event ID kept for resumption; a longer one is
	// ignored, as if the server had sent none.
	maxEventID = 1024
)

// lineReader reads lines terminated by "\n" (a "\r" before it is dropped)
// of at most max bytes each, the terminator not counted. A longer line
// fails with ErrBound as soon as it passes the bound, so memory stays
// bounded by max plus the buffer. A last line without its terminator is
// incomplete: io.EOF drops it.
type lineReader struct {
	br  *bufio.Reader
	max int
	buf []byte
}

// lineBuffer is the read buffer of a lineReader; longer lines are
// assembled from several reads.
const lineBuffer = 64 << 10

func newLineReader(r io.Reader, max, size int) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, size), max: max}
}

// next returns the next line, valid until the next call.
func (l *lineReader) next() ([]byte, error) {
	l.buf = l.buf[:0]
	for {
		chunk, err := l.br.ReadSlice('\n')
		n := len(chunk)
		if err == nil {
			n-- // the terminator
		}
		if len(l.buf)+n > l.max {
			return nil, fmt.Errorf("%w: a line is longer than %d bytes", ErrBound, l.max)
		}
		switch err {
		case nil:
			line := chunk[:n]
			if len(l.buf) > 0 {
				l.buf = append(l.buf, line...)
				line = l.buf
			}
			return bytes.TrimSuffix(line, []byte{'\r'}), nil
		case bufio.ErrBufferFull:
			l.buf = append(l.buf, chunk...)
		default:
			return nil, err
		}
	}
}

// frameReader splits a server's stdout into newline-delimited JSON-RPC
// frames, skipping empty lines. A frame longer than its bound ends the
// stream with an ErrBound error instead of growing memory without limit.
type frameReader struct{ lines *lineReader }

func newFrameReader(r io.Reader, max, size int) *frameReader {
	return &frameReader{lines: newLineReader(r, max, size)}
}

// next returns the next frame, valid until the next call.
func (f *frameReader) next() ([]byte, error) {
	for {
		line, err := f.lines.next()
		if err != nil || len(line) > 0 {
			return line, err
		}
	}
}

// sseReader parses a text/event-stream (the WHATWG server-sent events
// format) into events, bounded per line and per event. Lines end with
// "\n" or "\r\n"; a lone "\r" is not a terminator here (no MCP server
// sends one). It keeps the last event ID and the retry interval the server
// asked for, which resuming a stream needs.
type sseReader struct {
	lines   *lineReader
	maxData int
	started bool
	eof     bool

	data   []byte
	typ    string
	idBuf  string
	hasID  bool
	lastID string

	retry    time.Duration
	hasRetry bool
}

func newSSEReader(r io.Reader, maxLine, maxData, size int) *sseReader {
	return &sseReader{lines: newLineReader(r, maxLine, size), maxData: maxData}
}

// resume continues on a new stream, keeping the last event ID and retry.
func (s *sseReader) resume(r io.Reader) {
	s.lines = newLineReader(r, s.lines.max, s.lines.br.Size())
	s.started, s.eof = false, false
	s.data, s.typ, s.idBuf, s.hasID = s.data[:0], "", s.lastID, s.lastID != ""
}

// next returns the next event with data: its type ("message" when the
// server named none) and its data, valid until the next call. io.EOF is a
// stream the server ended; any other error a stream that broke off or
// passed a bound. An event left unterminated at the end of a stream is
// still delivered when its lines were complete (servers that omit the
// final blank line exist), but its ID does not count.
func (s *sseReader) next() (typ string, data []byte, err error) {
	for {
		if s.eof {
			return "", nil, io.EOF
		}
		line, err := s.lines.next()
		if err == io.EOF {
			s.eof = true
			if len(s.data) > 0 {
				return s.dispatch()
			}
			return "", nil, io.EOF
		}
		if err != nil {
			return "", nil, err
		}
		if !s.started {
			s.started = true
			line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf"))
		}
		if len(line) == 0 {
			// The event is complete: its ID counts even without data,
			// which is how a server primes a client to resume.
			if s.hasID {
				s.lastID = s.idBuf
			}
			if len(s.data) == 0 {
				s.typ = ""
				continue
			}
			return s.dispatch()
		}
		if line[0] == ':' {
			continue // a comment
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			value = bytes.TrimPrefix(value, []byte{' '})
		}
		switch string(field) {
		case "data":
			if len(s.data)+len(value)+1 > s.maxData+1 {
				return "", nil, fmt.Errorf("%w: an event's data is longer than %d bytes", ErrBound, s.maxData)
			}
			s.data = append(s.data, value...)
			s.data = append(s.data, '\n')
		case "event":
			s.typ = string(value)
		case "id":
			if bytes.IndexByte(value, 0) < 0 && len(value) <= maxEventID {
				s.idBuf, s.hasID = string(value), true
			}
		case "retry":
			// Only ASCII digits: ParseUint takes no sign in base 10.
			if ms, err := strconv.ParseUint(string(value), 10, 31); err == nil {
				s.retry, s.hasRetry = time.Duration(ms)*time.Millisecond, true
			}
		}
	}
}

// dispatch returns the buffered event and clears the buffer.
func (s *sseReader) dispatch() (string, []byte, error) {
	typ := s.typ
	if typ == "" {
		typ = "message"
	}
	data := s.data[:len(s.data)-1] // the last line's "\n"
	s.data, s.typ = s.data[:0], ""
	return typ, data, nil
}
