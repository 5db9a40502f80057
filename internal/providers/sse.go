package providers

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strconv"

	"github.com/pabloagent/pablo/internal/httpx"
)

// Frame is one server-sent event: its event name (empty means "message")
// and its data lines joined by "\n".
type Frame struct {
	Event string
	Data  []byte
}

// The SSE reader's failures.
var (
	// ErrFrameTooLarge: one frame (or one line) exceeds MaxFrameBytes.
	ErrFrameTooLarge = errors.New("providers: SSE frame exceeds its bound")
	// ErrTooManyFrames: the stream exceeds MaxFrames frames.
	ErrTooManyFrames = errors.New("providers: SSE stream exceeds its frame count bound")
	// ErrTruncated: the stream ended inside a frame.
	ErrTruncated = errors.New("providers: SSE stream ended inside a frame")
)

// SSEReader reads server-sent events with bounded memory. Lines end in LF,
// CRLF or CR. Comment lines and the id and retry fields are ignored.
type SSEReader struct {
	r         *bufio.Reader
	maxFrame  int
	maxFrames int
	frames    int
	line      []byte
	data      []byte
	event     []byte
	hasData   bool
	pendingCR bool
}

// NewSSEReader reads frames from r. maxFrameBytes bounds one frame's
// retained bytes and any single line; maxFrames bounds the frame count.
func NewSSEReader(r io.Reader, maxFrameBytes, maxFrames int) *SSEReader {
	return &SSEReader{r: bufio.NewReaderSize(r, 16<<10), maxFrame: maxFrameBytes, maxFrames: maxFrames}
}

// Next returns the next frame. It returns io.EOF at a clean end of stream,
// ErrTruncated when the stream ends inside a frame, and ErrFrameTooLarge or
// ErrTooManyFrames past a bound. Data is valid until the next call.
func (s *SSEReader) Next() (Frame, error) {
	s.data, s.event, s.hasData = s.data[:0], s.event[:0], false
	for {
		line, err := s.readLine()
		if err != nil {
			if err == io.EOF && (s.hasData || len(s.event) > 0) {
				return Frame{}, ErrTruncated
			}
			return Frame{}, err
		}
		if len(line) == 0 {
			if !s.hasData {
				s.event = s.event[:0]
				continue
			}
			s.frames++
			if s.frames > s.maxFrames {
				return Frame{}, ErrTooManyFrames
			}
			return Frame{Event: string(s.event), Data: s.data}, nil
		}
		if line[0] == ':' {
			continue
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) {
		case "data":
			if s.hasData {
				s.data = append(s.data, '\n')
			}
			s.data = append(s.data, value...)
			s.hasData = true
		case "event":
			s.event = append(s.event[:0], value...)
		}
		if len(s.data)+len(s.event) > s.maxFrame {
			return Frame{}, ErrFrameTooLarge
		}
	}
}

// readLine returns one line without its terminator, or io.EOF when the
// stream ends (a final unterminated line is returned first).
func (s *SSEReader) readLine() ([]byte, error) {
	s.line = s.line[:0]
	for {
		c, err := s.r.ReadByte()
		if err != nil {
			if err == io.EOF && len(s.line) > 0 {
				// An unterminated last line cannot complete a frame.
				return nil, ErrTruncated
			}
			return nil, err
		}
		if s.pendingCR {
			s.pendingCR = false
			if c == '\n' {
				continue
			}
		}
		switch c {
		case '\n':
			return s.line, nil
		case '\r':
			s.pendingCR = true
			return s.line, nil
		}
		if len(s.line) >= s.maxLine() {
			return nil, ErrFrameTooLarge
		}
		s.line = append(s.line, c)
		// Read the rest of a long line in bulk.
		if buf, _ := s.r.Peek(s.r.Buffered()); len(buf) > 0 {
			n := bytes.IndexAny(buf, "\r\n")
			if n < 0 {
				n = len(buf)
			}
			if len(s.line)+n > s.maxLine() {
				n = s.maxLine() - len(s.line) + 1
				if n > len(buf) {
					n = len(buf)
				}
			}
			s.line = append(s.line, buf[:n]...)
			s.r.Discard(n)
			if len(s.line) > s.maxLine() {
				return nil, ErrFrameTooLarge
			}
		}
	}
}

// maxLine bounds one line: a frame's bound plus its field name ("event: ").
func (s *SSEReader) maxLine() int { return s.maxFrame + len("event: ") }

// Frames reports how many frames have been returned.
func (s *SSEReader) Frames() int { return s.frames }

// frameError maps an SSE reader failure to a call failure.
func frameError(err error, limits Limits) *Error {
	var pe *Error
	switch {
	case errors.As(err, &pe):
		return pe
	case errors.Is(err, ErrFrameTooLarge):
		return malformed("an SSE frame exceeds the %s-byte bound", strconv.Itoa(limits.MaxFrameBytes))
	case errors.Is(err, ErrTooManyFrames):
		return malformed("the stream exceeds %s frames", strconv.Itoa(limits.MaxFrames))
	case errors.Is(err, httpx.ErrBodyTooLarge):
		return malformed("the response exceeds the %s-byte bound", strconv.FormatInt(limits.MaxResponseBytes, 10))
	case errors.Is(err, ErrTruncated), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return malformed("the stream ended before its terminal event")
	}
	e := malformed("reading the stream failed")
	e.Code = CodeTransport
	e.RetryClass = ""
	e.Err = err
	return e
}
