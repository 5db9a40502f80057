package tracefile

import (
	"errors"
	"fmt"
)

// ErrSetup is the sentinel kind of every failure to set up a native
// trace (a host maps it to the trace_setup_failed pre-admission code).
var ErrSetup = errors.New("pablo: trace setup failed")

// ErrClosed is returned for records written after the terminal record
// or after Close.
var ErrClosed = errors.New("pablo: trace is closed")

// Error explains why a trace could not be opened.
type Error struct {
	// Path is the trace path (or path template) involved.
	Path string
	// Reason says what to change.
	Reason string
	// Err is the cause, if any.
	Err error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("trace %q: %s: %v", e.Path, e.Reason, e.Err)
	}
	return fmt.Sprintf("trace %q: %s", e.Path, e.Reason)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrSetup) true.
func (e *Error) Is(target error) bool { return target == ErrSetup }
