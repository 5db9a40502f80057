package proc

import (
	"os"
	"sync"
	"time"
)

// capture accumulates the bounded output of the captured streams and feeds
// the coalescing streamer. One capture serves both streams so MaxTotal can be
// shared.
type capture struct {
	mu        sync.Mutex
	buf       [2][]byte
	limit     [2]int64
	truncated [2]bool
	total     int64
	maxTotal  int64 // 0 = none

	overflow func() // called (at most once per overflow event) when a bound is exceeded

	// streaming state, guarded by mu
	stream   bool
	pending  [2][]byte
	notify   chan struct{}
	chunkMax int
	interval time.Duration
	emit     func(stream string, chunk []byte)
}

var streamNames = [2]string{Stdout, Stderr}

// chunk is one coalesced piece of streamed output.
type chunk struct {
	stream string
	data   []byte
}

func newCapture(o Options, overflow func()) *capture {
	c := &capture{
		limit:    [2]int64{o.MaxStdout, o.MaxStderr},
		maxTotal: o.MaxTotal,
		overflow: overflow,
	}
	if o.OnOutput != nil {
		c.stream = true
		c.notify = make(chan struct{}, 1)
		c.chunkMax = o.ChunkBytes
		c.interval = o.FlushInterval
		c.emit = o.OnOutput
	}
	return c
}

// add records bytes read from stream i, keeping what fits the bounds.
func (c *capture) add(i int, p []byte) {
	c.mu.Lock()
	room := c.limit[i] - int64(len(c.buf[i]))
	if c.maxTotal > 0 {
		room = min(room, c.maxTotal-c.total)
	}
	room = max(room, 0)
	keep := p
	over := false
	if int64(len(keep)) > room {
		keep = keep[:room]
		over = true
		c.truncated[i] = true
	}
	c.buf[i] = append(c.buf[i], keep...)
	c.total += int64(len(keep))
	if c.stream && len(keep) > 0 {
		c.pending[i] = append(c.pending[i], keep...)
	}
	c.mu.Unlock()
	if c.stream && len(keep) > 0 {
		select {
		case c.notify <- struct{}{}:
		default:
		}
	}
	if over && c.overflow != nil {
		c.overflow()
	}
}

// read drains r into stream i until EOF or until r is closed under it.
func (c *capture) read(i int, r *os.File) {
	buf := make([]byte, 32*1024)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			c.add(i, buf[:n])
		}
		if err != nil {
			// io.EOF is the normal end; os.ErrClosed or a deadline error
			// means the owner gave up on a pipe held open by a stray
			// process, which the owner reports itself.
			return
		}
	}
}

// takePending removes pending bytes ready for emission: whole chunks only,
// unless all is set.
func (c *capture) takePending(all bool) (out []chunk) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.pending {
		for len(c.pending[i]) >= c.chunkMax || (all && len(c.pending[i]) > 0) {
			n := min(c.chunkMax, len(c.pending[i]))
			piece := make([]byte, n)
			copy(piece, c.pending[i][:n])
			c.pending[i] = c.pending[i][n:]
			out = append(out, chunk{streamNames[i], piece})
		}
		if len(c.pending[i]) == 0 {
			c.pending[i] = nil
		}
	}
	return out
}

func (c *capture) hasPending() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending[0]) > 0 || len(c.pending[1]) > 0
}

// flush runs the coalescing streamer until readersDone is closed, then emits
// whatever is left. It is run by the Process in one goroutine and joined.
func (c *capture) flush(readersDone <-chan struct{}) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	armed := false
	send := func(all bool) {
		for _, p := range c.takePending(all) {
			c.emit(p.stream, p.data)
		}
	}
	for {
		select {
		case <-c.notify:
			send(false)
			if !armed && c.hasPending() {
				timer.Reset(c.interval)
				armed = true
			}
		case <-timer.C:
			armed = false
			send(true)
		case <-readersDone:
			timer.Stop()
			send(true)
			return
		}
	}
}

func (c *capture) result(r *Result) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r.Stdout, r.Stderr = c.buf[0], c.buf[1]
	r.StdoutTruncated, r.StderrTruncated = c.truncated[0], c.truncated[1]
}
