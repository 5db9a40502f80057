package sse

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
)

// MaxIDBytes bounds an event ID kept as the last event ID; a longer one is
// ignored, as if the server had sent none.
const MaxIDBytes = 1024

// DefaultBufferSize is the read buffer when [Options.BufferSize] is zero.
const DefaultBufferSize = 32 << 10

var (
	// ErrBound is the kind of every [*BoundError].
	ErrBound = errors.New("sse: a bound is exceeded")
	// ErrUnterminated is a stream that ended inside an event: after a field
	// line no blank line completed, or in the middle of a line. The
	// incomplete event is not returned. It matches io.ErrUnexpectedEOF.
	ErrUnterminated = fmt.Errorf("sse: the stream ended inside an event, before the blank line that completes it: %w", io.ErrUnexpectedEOF)
)

// BoundError is a stream past one of its [Options] bounds.
type BoundError struct {
	// Bound names it: "line", "event" or "events".
	Bound string
	// Limit is the bound's value.
	Limit int
}

func (e *BoundError) Error() string {
	switch e.Bound {
	case "line":
		return fmt.Sprintf("sse: a line is longer than %d bytes", e.Limit)
	case "event":
		return fmt.Sprintf("sse: an event (its type and data) is longer than %d bytes", e.Limit)
	default:
		return fmt.Sprintf("sse: the stream has more than %d events", e.Limit)
	}
}

// Is reports whether target is [ErrBound].
func (e *BoundError) Is(target error) bool { return target == ErrBound }

// Options are a Reader's bounds.
type Options struct {
	// MaxLine bounds one line in bytes, its ending not counted. Required.
	MaxLine int
	// MaxEvent bounds the bytes one event holds: its type and its data,
	// the data lines joined by "\n". Required.
	MaxEvent int
	// MaxEvents bounds how many events Next returns; zero is no bound.
	MaxEvents int
	// BufferSize is the read buffer; zero is DefaultBufferSize. Longer
	// lines are assembled from several reads.
	BufferSize int
}

// Event is one complete event.
type Event struct {
	// Type is the event field's value, empty when the event had none (the
	// standard's "message").
	Type string
	// Data is the data lines joined by "\n", valid until the next call.
	Data []byte
	// ID is the stream's last event ID once this event completed.
	ID string
}

// Reader reads events from one stream, or several in turn (see Resume).
type Reader struct {
	br   *bufio.Reader
	opts Options

	line      []byte
	pendingCR bool // the last line ended in CR: a following LF is its
	started   bool // the stream's first line has been read (BOM handled)
	pending   bool // a field line since the last blank line

	data  []byte // each line's value and "\n"
	typ   []byte
	idBuf string

	lastID   string
	retry    time.Duration
	hasRetry bool
	events   int
	err      error
}

var bom = []byte("\xef\xbb\xbf")

// NewReader reads events from r within opts. It panics if MaxLine or
// MaxEvent is not positive: a reader without bounds is a programming error.
func NewReader(r io.Reader, opts Options) *Reader {
	if opts.MaxLine <= 0 || opts.MaxEvent <= 0 {
		panic("sse: NewReader needs a positive MaxLine and MaxEvent")
	}
	if opts.BufferSize <= 0 {
		opts.BufferSize = DefaultBufferSize
	}
	return &Reader{br: bufio.NewReaderSize(r, opts.BufferSize), opts: opts}
}

// Resume continues on a new stream (a reconnection), keeping the last event
// ID, the reconnection time and the event count, and dropping whatever the
// old stream left incomplete.
func (r *Reader) Resume(src io.Reader) {
	r.br.Reset(src)
	r.pendingCR, r.started, r.pending = false, false, false
	r.data, r.typ, r.idBuf = r.data[:0], r.typ[:0], r.lastID
	r.err = nil
}

// LastEventID is the ID of the last complete event that set one: what a
// reconnection sends as Last-Event-ID.
func (r *Reader) LastEventID() string { return r.lastID }

// Retry is the reconnection time the server asked for, if it did.
func (r *Reader) Retry() (time.Duration, bool) { return r.retry, r.hasRetry }

// Events is how many events Next has returned.
func (r *Reader) Events() int { return r.events }

// Next returns the next complete event. It returns io.EOF when the stream
// ends at an event boundary, [ErrUnterminated] when it ends inside an
// event, a [*BoundError] past a bound, and the underlying reader's error
// otherwise.
func (r *Reader) Next() (Event, error) {
	if r.err != nil {
		return Event{}, r.err
	}
	ev, err := r.next()
	if err != nil {
		r.err = err
	}
	return ev, err
}

func (r *Reader) next() (Event, error) {
	for {
		line, err := r.readLine()
		if err != nil {
			if err == io.EOF && r.pending {
				err = ErrUnterminated
			}
			return Event{}, err
		}
		if !r.started {
			r.started = true
			line = bytes.TrimPrefix(line, bom)
		}
		if len(line) == 0 {
			r.pending = false
			r.lastID = r.idBuf
			if len(r.data) == 0 {
				r.typ = r.typ[:0]
				continue
			}
			if r.opts.MaxEvents > 0 && r.events >= r.opts.MaxEvents {
				return Event{}, &BoundError{Bound: "events", Limit: r.opts.MaxEvents}
			}
			r.events++
			ev := Event{Type: string(r.typ), Data: r.data[:len(r.data)-1], ID: r.lastID}
			r.data, r.typ = r.data[:0], r.typ[:0]
			return ev, nil
		}
		if line[0] == ':' {
			continue
		}
		r.pending = true
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			value = bytes.TrimPrefix(value, []byte{' '})
		}
		switch string(field) {
		case "data":
			// With this line the joined data is len(r.data)+len(value):
			// r.data holds a "\n" after each line, the last one dropped.
			if len(r.typ)+len(r.data)+len(value) > r.opts.MaxEvent {
				return Event{}, &BoundError{Bound: "event", Limit: r.opts.MaxEvent}
			}
			r.data = append(r.data, value...)
			r.data = append(r.data, '\n')
		case "event":
			if len(value)+max(len(r.data)-1, 0) > r.opts.MaxEvent {
				return Event{}, &BoundError{Bound: "event", Limit: r.opts.MaxEvent}
			}
			r.typ = append(r.typ[:0], value...)
		case "id":
			if bytes.IndexByte(value, 0) < 0 && len(value) <= MaxIDBytes {
				r.idBuf = string(value)
			}
		case "retry":
			// ASCII digits only: in base 10 ParseUint takes no sign and no
			// underscore. A value past 31 bits is ignored.
			if ms, err := strconv.ParseUint(string(value), 10, 31); err == nil {
				r.retry, r.hasRetry = time.Duration(ms)*time.Millisecond, true
			}
		}
	}
}

// readLine returns the next line without its ending, valid until the next
// call. It returns io.EOF at the end of the stream on a line boundary and
// ErrUnterminated inside a line. A line ending in CR is returned at once;
// an LF after it is skipped by the next call, so a stream that pauses
// between the two delivers its event without waiting.
func (r *Reader) readLine() ([]byte, error) {
	r.line = r.line[:0]
	if r.pendingCR {
		b, err := r.br.Peek(1)
		if err != nil {
			return nil, err
		}
		r.pendingCR = false
		if b[0] == '\n' {
			_, _ = r.br.Discard(1)
		}
	}
	for {
		if r.br.Buffered() == 0 {
			if _, err := r.br.Peek(1); err != nil {
				if err == io.EOF && len(r.line) > 0 {
					return nil, ErrUnterminated
				}
				return nil, err
			}
		}
		buf, _ := r.br.Peek(r.br.Buffered())
		i := bytes.IndexAny(buf, "\r\n")
		n := i
		if i < 0 {
			n = len(buf)
		}
		if len(r.line)+n > r.opts.MaxLine {
			return nil, &BoundError{Bound: "line", Limit: r.opts.MaxLine}
		}
		r.line = append(r.line, buf[:n]...)
		if i < 0 {
			_, _ = r.br.Discard(n)
			continue
		}
		r.pendingCR = buf[i] == '\r'
		_, _ = r.br.Discard(n + 1)
		return r.line, nil
	}
}
