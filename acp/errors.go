package acp

import (
	"errors"
	"strconv"
)

// The reasons [Serve] closes a connection. Each error it returns wraps one
// of them (errors.Is), or is the writer's own I/O error.
var (
	// ErrFrame marks an input frame that breaks the framing: a
	// [*FrameError] says which rule and where.
	ErrFrame = errors.New("acp: malformed frame")
	// ErrInputLimit: the client sent more than Options.MaxInput bytes.
	ErrInputLimit = errors.New("acp: input limit reached")
	// ErrMessageLimit: a session (or the messages that name none) sent
	// more than Options.MaxMessages messages.
	ErrMessageLimit = errors.New("acp: message limit reached")
	// ErrWriteStalled: one frame's write did not finish within
	// Options.WriteTimeout.
	ErrWriteStalled = errors.New("acp: output write stalled")
)

// FrameRule names the framing rule an input frame broke.
type FrameRule string

// The framing rules.
const (
	FrameTooLong      FrameRule = "too_long"     // over Options.MaxLine
	FrameUnterminated FrameRule = "unterminated" // the input ended inside a frame
	FrameInvalidUTF8  FrameRule = "invalid_utf8"
	FrameBatch        FrameRule = "batch"      // a JSON-RPC batch array
	FrameNotObject    FrameRule = "not_object" // anything but a JSON object
	FrameMalformed    FrameRule = "malformed"  // an object that is not valid JSON
)

// FrameError is an input frame that broke a framing rule; the connection
// is closed after it. It matches ErrFrame with errors.Is.
type FrameError struct {
	// Frame is the 1-based number of the frame.
	Frame int64
	Rule  FrameRule
	// Detail says what to change, never quoting the frame's content.
	Detail string
}

func (e *FrameError) Error() string {
	return "acp: frame " + strconv.FormatInt(e.Frame, 10) + ": " + string(e.Rule) + ": " + e.Detail
}

// Is reports whether target is ErrFrame.
func (e *FrameError) Is(target error) bool { return target == ErrFrame }
