package mcp

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/pabloagent/pablo/internal/sse"
)

// Bounds of the Streamable HTTP event streams, beside MaxHTTPStreamBytes
// for a whole response.
const (
	// maxEventLine bounds one line of an event stream: a data line holding
	// a whole frame, and its field name.
	maxEventLine = MaxFrameBytes + 64
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

// sseReader reads a Streamable HTTP event stream with the shared reader
// of internal/sse, bounded per line and per event, and keeps the last
// event ID and the retry interval the server asked for, which resuming a
// stream needs.
type sseReader struct {
	r *sse.Reader

	lastID   string
	retry    time.Duration
	hasRetry bool
}

// newSSEReader bounds each line by maxLine, each event by maxData, and
// reads through a buffer of size bytes.
func newSSEReader(r io.Reader, maxLine, maxData, size int) *sseReader {
	return &sseReader{r: sse.NewReader(r, sse.Options{MaxLine: maxLine, MaxEvent: maxData, BufferSize: size})}
}

// resume continues on a new stream, keeping the last event ID and retry.
func (s *sseReader) resume(r io.Reader) { s.r.Resume(r) }

// next returns the next event with data: its type ("message" when the
// server named none) and its data, valid until the next call. io.EOF is a
// stream the server ended at an event boundary; sse.ErrUnterminated one it
// ended inside an event, which is not delivered (the shared rule: resuming
// from the last complete event's ID recovers it); an ErrBound error a
// stream past a bound; any other error a stream that broke off.
func (s *sseReader) next() (typ string, data []byte, err error) {
	ev, err := s.r.Next()
	s.lastID = s.r.LastEventID()
	s.retry, s.hasRetry = s.r.Retry()
	if errors.Is(err, sse.ErrBound) {
		return "", nil, fmt.Errorf("%w: %s", ErrBound, strings.TrimPrefix(err.Error(), "sse: "))
	}
	if err != nil {
		return "", nil, err
	}
	if ev.Type == "" {
		ev.Type = "message"
	}
	return ev.Type, ev.Data, nil
}
