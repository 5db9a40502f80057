package mcp

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/pabloagent/pablo/internal/proc"
)

// stdioConn is a stdio server: a process group we own, and mcp-go's stdio
// transport over its pipes.
type stdioConn struct {
	p      *proc.Process
	tr     *transport.Stdio
	writes *countingWriter
	cancel context.CancelFunc
}

// startStdio launches srv with exactly env as its environment. It does not
// search PATH, run a shell or inherit anything from this process: the
// command is absolute, the environment cleared. The process leads its own
// group, owned by internal/proc, so Close kills grandchildren too (mcp-go's
// own Close signals only the direct child).
func startStdio(srv *Server, env []string) (*stdioConn, error) {
	if !filepath.IsAbs(srv.Command) {
		return nil, fmt.Errorf("command must be an absolute path, got %q", truncate(srv.Command, 200))
	}
	cmd := &exec.Cmd{Path: srv.Command, Args: append([]string{srv.Command}, srv.Args...), Env: env, Dir: srv.Dir}
	if cmd.Env == nil {
		cmd.Env = []string{}
	}
	// The group lives as long as the catalog, not the caller's context:
	// Close ends it.
	ctx, cancel := context.WithCancel(context.Background())
	p, err := proc.Start(ctx, cmd, proc.Options{PipeStdin: true, PipeStdout: true})
	if err != nil {
		cancel()
		return nil, err
	}
	w := &countingWriter{w: p.Stdin()}
	r := &frameReader{r: p.Stdout(), max: MaxFrameBytes}
	tr := transport.NewIO(r, w, nil)
	if err := tr.Start(ctx); err != nil {
		cancel()
		p.Close()
		return nil, err
	}
	return &stdioConn{p: p, tr: tr, writes: w, cancel: cancel}, nil
}

// close ends the session: stdin is closed (EOF to the server), then the
// whole group is killed and joined, its pipes closed. A group that cannot
// be proven gone is an error wrapping proc.ErrCleanup.
func (c *stdioConn) close() error {
	// Closing stdin can only fail when the server is already gone; the
	// group teardown below is what has to be proven.
	_ = c.tr.Close()
	err := c.p.Close()
	c.cancel()
	return err
}

// countingWriter counts completed writes to the server's stdin, so a
// failed request can tell "never left" from "may have been read".
type countingWriter struct {
	w io.WriteCloser
	n atomic.Uint64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	if n > 0 {
		c.n.Add(1)
	}
	return n, err
}

func (c *countingWriter) Close() error { return c.w.Close() }

func (c *countingWriter) sent() uint64 { return c.n.Load() }

// frameReader bounds the lines read from a server: mcp-go reads each frame
// with an unbounded ReadString, so a line longer than max ends the stream
// with an error instead of growing memory without limit.
type frameReader struct {
	r    io.Reader
	max  int
	line int
	mu   sync.Mutex
	err  error
}

func (f *frameReader) Read(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return 0, f.err
	}
	n, err := f.r.Read(p)
	for i := 0; i < n; {
		j := bytes.IndexByte(p[i:n], '\n')
		if j < 0 {
			f.line += n - i
			break
		}
		f.line += j
		if f.line > f.max {
			break
		}
		f.line = 0
		i += j + 1
	}
	if f.line > f.max {
		f.err = fmt.Errorf("%w: a frame is longer than %d bytes", ErrBound, f.max)
		return 0, f.err
	}
	return n, err
}

// exited reports whether the server's process group is gone.
func (c *stdioConn) exited() bool {
	select {
	case <-c.p.Done():
		return true
	default:
		return false
	}
}
