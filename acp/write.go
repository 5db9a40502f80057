package acp

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// writer is the one goroutine that writes frames: each is written whole,
// then flushed when the output can flush, and only then acknowledged, so
// a frame is never interleaved with another and a sender knows it left.
//
// A write that has not returned after the timeout (on the injected clock)
// stalls the connection: stalled is called (it cancels all work), the
// output is closed when it can be, and every later send fails with
// ErrWriteStalled. When the output also takes a write deadline (a pollable
// file, a network connection), each write gets one, so the blocked write
// itself returns.
type writer struct {
	out     io.Writer
	clock   Clock
	timeout time.Duration
	stalled func()

	frames chan writeRequest
	done   chan struct{} // closed when the goroutine has returned

	mu     sync.Mutex
	err    error         // the first failure: later sends return it
	failed chan struct{} // closed at the first failure
	closed bool
}

type writeRequest struct {
	frame []byte
	ack   chan error
}

type flusher interface{ Flush() error }

type deadliner interface{ SetWriteDeadline(time.Time) error }

func newWriter(out io.Writer, clock Clock, timeout time.Duration, stalled func()) *writer {
	w := &writer{out: out, clock: clock, timeout: timeout, stalled: stalled,
		frames: make(chan writeRequest), done: make(chan struct{}), failed: make(chan struct{})}
	go w.run()
	return w
}

func (w *writer) run() {
	defer close(w.done)
	dl, _ := w.out.(deadliner)
	for req := range w.frames {
		if err := w.failure(); err != nil {
			req.ack <- err
			continue
		}
		stall := w.clock.AfterFunc(w.timeout, func() {
			w.fail(fmt.Errorf("%w: a frame was not written within %s", ErrWriteStalled, w.timeout))
		})
		if dl != nil && dl.SetWriteDeadline(time.Now().Add(w.timeout)) != nil {
			dl = nil // the output takes no deadline: the timer alone
		}
		_, err := w.out.Write(req.frame)
		if err == nil {
			if f, ok := w.out.(flusher); ok {
				err = f.Flush()
			}
		}
		stall.Stop()
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				err = fmt.Errorf("%w: a frame was not written within %s", ErrWriteStalled, w.timeout)
			}
			w.fail(err)
			err = w.failure()
		}
		req.ack <- err
	}
}

// send writes one frame (its newline included) and waits until it is
// written and flushed, or the writer has failed.
func (w *writer) send(frame []byte) error {
	req := writeRequest{frame: frame, ack: make(chan error, 1)}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return errWriterClosed
	}
	w.mu.Unlock()
	select {
	case w.frames <- req:
	case <-w.failed:
		return w.failure()
	}
	select {
	case err := <-req.ack:
		return err
	case <-w.failed:
		return w.failure()
	}
}

func (w *writer) failure() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// fail records the first failure, closes the output and, for a stall,
// cancels the work.
func (w *writer) fail(err error) {
	w.mu.Lock()
	if w.err != nil {
		w.mu.Unlock()
		return
	}
	w.err = err
	close(w.failed)
	w.mu.Unlock()
	if errors.Is(err, ErrWriteStalled) {
		w.stalled()
		if c, ok := w.out.(io.Closer); ok {
			c.Close()
		}
	}
}

// close stops the writer once every sender has returned and waits for
// its goroutine; the caller guarantees no send is in flight.
func (w *writer) close() error {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	close(w.frames)
	<-w.done
	return w.failure()
}

var errWriterClosed = errors.New("acp: connection closed")
