package providers

import (
	"errors"
	"io"
	"strconv"

	"github.com/pabloagent/pablo/internal/httpx"
	"github.com/pabloagent/pablo/internal/sse"
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
	// ErrTruncated: the stream ended inside a frame. It is
	// sse.ErrUnterminated, the shared reader's rule for an event no blank
	// line completed.
	ErrTruncated = sse.ErrUnterminated
)

// SSEReader reads a provider's server-sent events with the shared reader
// of internal/sse (lines in LF, CRLF or CR; comments, id and retry read and
// ignored here), naming its failures in this package's terms.
type SSEReader struct{ r *sse.Reader }

// NewSSEReader reads frames from r. maxFrameBytes bounds one frame (its
// event name and data) and, with room for a field name, any single line;
// maxFrames bounds the frame count.
func NewSSEReader(r io.Reader, maxFrameBytes, maxFrames int) *SSEReader {
	return &SSEReader{r: sse.NewReader(r, sse.Options{
		MaxLine:    maxFrameBytes + len("event: "),
		MaxEvent:   maxFrameBytes,
		MaxEvents:  maxFrames,
		BufferSize: 16 << 10,
	})}
}

// Next returns the next frame. It returns io.EOF at a clean end of stream,
// ErrTruncated when the stream ends inside a frame, and ErrFrameTooLarge or
// ErrTooManyFrames past a bound. Data is valid until the next call.
func (s *SSEReader) Next() (Frame, error) {
	ev, err := s.r.Next()
	if err != nil {
		return Frame{}, frameErr(err)
	}
	return Frame{Event: ev.Type, Data: ev.Data}, nil
}

// frameErr names a reader failure in this package's terms. It is apart
// from Next so the BoundError it inspects is not allocated per frame.
func frameErr(err error) error {
	var be *sse.BoundError
	if errors.As(err, &be) {
		if be.Bound == "events" {
			return ErrTooManyFrames
		}
		return ErrFrameTooLarge
	}
	return err
}

// Frames reports how many frames have been returned.
func (s *SSEReader) Frames() int { return s.r.Events() }

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
