package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pabloagent/pablo/internal/egress"
	"github.com/pabloagent/pablo/internal/proc"
	"github.com/pabloagent/pablo/internal/sandbox"
	"github.com/pabloagent/pablo/internal/textx"
)

// answerAllowance bounds the write of an answer to a server's request,
// waiting for a request's write in progress included, so a server that
// stops reading its stdin cannot stall the reader.
const answerAllowance = time.Second

// stdioConn is a stdio server: a process group we own, and a
// newline-delimited JSON-RPC connection over its pipes.
type stdioConn struct {
	*lineConn
	p       *proc.Process
	cancel  context.CancelFunc
	sandbox *sandbox.Command
	// sandboxed and shown say what the server's sandbox shows of the host,
	// to name a path it hid from a server that failed.
	sandboxed bool
	shown     func(string) bool
	// stopEgress ends the egress proxy of a server under network
	// allowlist, once its group is gone (nil without one).
	stopEgress func()
}

// exitReport describes a server that exited during startup: its exit
// status, the end of its stderr (masked, bounded) and, in a sandbox, the
// paths it named that the sandbox hid, with the read_paths entry that
// would show each.
func (c *stdioConn) exitReport(mask func(string) string) string {
	res, _ := c.p.Wait()
	msg := fmt.Sprintf("exit status %d", res.ExitCode)
	if res.Signal != "" {
		msg = "killed by " + res.Signal
	}
	if tail := stderrTail(res.Stderr, mask); tail != "" {
		msg += "; its stderr ends: " + tail
	} else {
		msg += "; it wrote nothing to stderr"
	}
	if c.sandboxed {
		if hidden := hiddenPaths(string(res.Stderr), c.shown); len(hidden) > 0 {
			msg += "; " + strings.Join(hidden, "; ")
		}
	}
	return msg
}

// startStdio launches srv with exactly env as its environment, in its
// sandbox (srv.Sandbox, through l) unless that is off. It does not search
// PATH, run a shell or inherit anything from this process: the command is
// absolute, the environment cleared. The process leads its own group,
// owned by internal/proc, so close kills grandchildren too (and, in the
// sandbox, its PID namespace ends with it). Notifications from the server
// go to onNote, on the connection's reader. ctx only lends its values (a
// process-group recorder among them): the group outlives it.
//
// Under network allowlist the server gets an egress proxy of its own, on a
// Unix socket bound into its sandbox, for as long as it runs: forwarder is
// the binary that carries its connections out (Options.EgressForwarder),
// and record receives each of the proxy's decisions.
func startStdio(ctx context.Context, l *sandbox.Launcher, srv *Server, env []string, onNote func(method string, params json.RawMessage), onRequest requestHandler, forwarder string, record func(egress.Decision) error) (*stdioConn, error) {
	if !filepath.IsAbs(srv.Command) {
		return nil, fmt.Errorf("command must be an absolute path, got %q", textx.Shorten(srv.Command, 200))
	}
	if env == nil {
		env = []string{}
	}
	p := srv.Sandbox.Normalized()
	ln, err := resolveLaunch(srv.Command, exec.LookPath)
	if err != nil {
		return nil, err
	}
	if p.Mode != sandbox.Off {
		// The launcher is checked here, as exec would check it, so a
		// missing one is a launcher error and not a server that ended.
		if info, err := os.Stat(srv.Command); err != nil || !info.Mode().IsRegular() || info.Mode().Perm()&0o111 == 0 {
			return nil, fmt.Errorf("command %q is not an executable file", textx.Shorten(srv.Command, 200))
		}
		if err := l.Ready(ctx); err != nil {
			return nil, err
		}
		shown := slices.Clip(p.ReadPaths)
		shown = append(shown, launcherTree(srv.Command, srv.Dir, shown)...)
		// The package root and the interpreter, unless already shown.
		for _, d := range ln.show {
			if !shownBy(sandbox.Profile{ReadPaths: shown}, srv.Dir)(d) {
				shown = append(shown, d)
			}
		}
		p.ReadPaths = shown
	}
	dir := srv.Dir
	if dir == "" && p.Mode != sandbox.Off {
		// The filesystem scope is about Dir: without one there is nothing
		// of the host to show, and the server starts in / of its own.
		dir, p.Filesystem = "/", sandbox.NoFS
	}
	args := append(append([]string{ln.program}, ln.pre...), srv.Args...)
	spec := sandbox.Spec{Path: ln.program, Args: args, Env: env, Workspace: srv.Dir, Dir: dir}
	stopEgress := func() {}
	if p.Mode != sandbox.Off && p.Network == sandbox.Allowlist {
		if !filepath.IsAbs(forwarder) {
			return nil, errors.New(`network "allowlist" needs Options.EgressForwarder, the absolute path of a binary that calls pablo.EgressForwarderMain first thing in main (the host's own executable)`)
		}
		socket, stop, err := egress.ServeUnix(ctx, egress.Options{Allow: p.Allow, Record: record})
		if err != nil {
			return nil, err
		}
		stopEgress = stop
		spec.Egress = &sandbox.Egress{Socket: socket, Forwarder: forwarder}
	}
	sc, err := l.Command(p, spec)
	if err != nil {
		stopEgress()
		return nil, err
	}
	// The group lives as long as the catalog, not the caller's context:
	// close ends it.
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	// The head of stderr is kept: bubblewrap's message, should it fail to
	// set the sandbox up, and what a server that exits during startup said.
	opts := proc.Options{PipeStdin: true, PipeStdout: true, MaxStderr: maxStderrCapture}
	pr, err := sc.Start(ctx, opts)
	if err != nil {
		sc.Close()
		cancel()
		stopEgress()
		return nil, err
	}
	return &stdioConn{lineConn: newLineConn(pr.Stdout(), pr.Stdin(), onNote, onRequest), p: pr, cancel: cancel, sandbox: sc,
		sandboxed: p.Mode != sandbox.Off, shown: shownBy(p, srv.Dir), stopEgress: stopEgress}, nil
}

// launcherTree is what a sandboxed server is shown of its launcher: the
// directory of the command and of the file it resolves to, unless a system
// directory, the working directory or a read path already shows it.
func launcherTree(command, dir string, shown []string) []string {
	var out []string
	cands := []string{filepath.Dir(command)}
	if real, err := filepath.EvalSymlinks(command); err == nil {
		cands = append(cands, filepath.Dir(real))
	}
	for _, c := range cands {
		covered := sandbox.IsSystemPath(c) || dir != "" && within(dir, c) || slices.Contains(out, c)
		for _, r := range shown {
			covered = covered || within(r, c)
		}
		if !covered {
			out = append(out, c)
		}
	}
	return out
}

// within reports whether p is dir or below it; both clean and absolute.
func within(dir, p string) bool {
	return p == dir || dir == "/" || len(p) > len(dir) && p[:len(dir)] == dir && p[len(dir)] == '/'
}

// sandboxFailure is the *sandbox.SetupError of a sandboxed server whose
// process has ended without its sandbox ever being set up, or nil.
func (c *stdioConn) sandboxFailure() error {
	if c.sandbox == nil || !c.exited() {
		return nil
	}
	res, _ := c.p.Wait()
	return c.sandbox.Finish(res.Stderr)
}

// close ends the session: stdin is closed (EOF to the server), then the
// whole group is killed and joined, its pipes closed, and the reader
// joined. A group that cannot be proven gone is an error wrapping
// proc.ErrCleanup.
func (c *stdioConn) close() error {
	// Closing stdin can only fail when the server is already gone; the
	// group teardown below is what has to be proven.
	_ = c.w.Close()
	c.endLife()
	err := c.p.Close()
	c.cancel()
	<-c.done
	c.served.Wait()
	if c.sandbox != nil {
		c.sandbox.Close()
	}
	if c.stopEgress != nil {
		c.stopEgress()
	}
	return err
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

// lineConn is JSON-RPC over a pair of byte streams, one message per line.
// One reader goroutine, started by newLineConn and ended by the reader
// reaching the end of its stream, routes responses to the waiting request
// by ID, notifications to onNote and answers the server's own requests.
// Writes are serialized, one whole frame each.
type lineConn struct {
	w      io.WriteCloser
	onNote func(method string, params json.RawMessage)
	// onRequest, when set, answers the server's requests other than ping;
	// each runs on its own goroutine under life, joined through served.
	onRequest requestHandler
	life      context.Context
	endLife   context.CancelFunc
	served    sync.WaitGroup

	// wsem (capacity 1) serializes writes; unlike a mutex, waiting for it
	// honours the writer's context, so the reader, answering a server's
	// request, never waits on a request's write for longer than its
	// allowance.
	wsem   chan struct{}
	wbuf   []byte
	broken error // set when a write stopped mid-frame: the stream is unusable
	// cut, run by context.AfterFunc when a write's context ends, sets a
	// write deadline in the past and then sends on cutDone (capacity 1),
	// which the interrupted write receives. Built by the first write that
	// needs it, and only touched while holding wsem: a write is made for
	// every call.
	cut     func()
	cutDone chan struct{}

	mu      sync.Mutex
	pending map[int64]chan reply
	end     error         // why the reader stopped; set before done closes
	done    chan struct{} // closed when the reader has returned
}

// newLineConn starts the reader on r. The owner joins it by ending r (the
// process exits, or the pipe is closed) and waiting on done.
func newLineConn(r io.Reader, w io.WriteCloser, onNote func(string, json.RawMessage), onRequest requestHandler) *lineConn {
	c := &lineConn{w: w, onNote: onNote, onRequest: onRequest, wsem: make(chan struct{}, 1), pending: map[int64]chan reply{}, done: make(chan struct{})}
	c.life, c.endLife = context.WithCancel(context.Background())
	go c.read(newFrameReader(r, MaxFrameBytes, lineBuffer))
	return c
}

func (c *lineConn) read(f *frameReader) {
	defer close(c.done)
	for {
		frame, err := f.next()
		if err != nil {
			switch {
			case errors.Is(err, io.EOF):
				err = fmt.Errorf("%w: its stdout reached end of file", errStreamEnded)
			case errors.Is(err, os.ErrClosed):
				err = errors.New("the connection was closed")
			}
			c.mu.Lock()
			c.end = err
			c.mu.Unlock()
			return
		}
		if err := c.dispatch(frame); err != nil {
			// A line that is not a JSON-RPC object ends the session: the
			// pending request fails now with ErrProtocol, not at its
			// deadline.
			c.mu.Lock()
			c.end = err
			c.mu.Unlock()
			return
		}
	}
}

// dispatch handles one frame. A response nobody waits for is ignored; a line
// that is not a JSON-RPC object is a framingError.
func (c *lineConn) dispatch(frame []byte) error {
	return route(frame, c.onNote, func(id json.RawMessage, method string, params json.RawMessage) {
		if c.onRequest == nil || method == "ping" {
			ctx, cancel := context.WithTimeout(context.Background(), answerAllowance)
			_, _ = c.write(ctx, func(b []byte) []byte { return appendAnswer(b, id, method) })
			cancel()
			return
		}
		// A request may wait for a person (an elicitation): it is answered
		// on a goroutine of its own, so the reader goes on reading, and
		// joined when the connection closes.
		c.served.Add(1)
		go func() {
			defer c.served.Done()
			res, e := c.onRequest(c.life, method, params)
			ctx, cancel := context.WithTimeout(c.life, answerAllowance)
			_, _ = c.write(ctx, func(b []byte) []byte { return appendResponse(b, id, res, e) })
			cancel()
		}()
	}, func(id int64, r reply) {
		c.mu.Lock()
		ch := c.pending[id]
		delete(c.pending, id)
		c.mu.Unlock()
		if ch != nil {
			ch <- r
		}
	})
}

// write sends one frame built by build, honouring ctx while it waits for
// another write and while the pipe is full: a write that ctx interrupts
// mid-frame leaves the stream unusable for every later frame.
func (c *lineConn) write(ctx context.Context, build func([]byte) []byte) (written bool, err error) {
	select {
	case c.wsem <- struct{}{}:
	case <-ctx.Done():
		return false, context.Cause(ctx)
	}
	defer func() { <-c.wsem }()
	if c.broken != nil {
		return false, c.broken
	}
	c.wbuf = append(build(c.wbuf[:0]), '\n')
	d, deadlined := c.w.(interface{ SetWriteDeadline(time.Time) error })
	var stop func() bool
	if deadlined && ctx.Done() != nil {
		if c.cut == nil {
			c.cutDone = make(chan struct{}, 1)
			c.cut = func() {
				_ = d.SetWriteDeadline(time.Unix(1, 0))
				c.cutDone <- struct{}{}
			}
		}
		stop = context.AfterFunc(ctx, c.cut)
	}
	n, err := c.w.Write(c.wbuf)
	if stop != nil && !stop() {
		// cut has started: wait until it has set its deadline.
		<-c.cutDone
		_ = d.SetWriteDeadline(time.Time{})
	}
	if len(c.wbuf) > 64<<10 {
		c.wbuf = nil // do not keep a large argument alive
	}
	if err != nil && n > 0 {
		c.broken = fmt.Errorf("%w: an earlier write to the server's stdin stopped mid-frame (%v)", ErrSessionEnded, err)
	}
	return n > 0, err
}

// call implements rpcConn.
func (c *lineConn) call(ctx context.Context, id int64, method string, params json.RawMessage) (reply, bool, error) {
	ch := make(chan reply, 1)
	c.mu.Lock()
	if c.end != nil {
		end := c.end
		c.mu.Unlock()
		return reply{}, false, fmt.Errorf("%w: %v", ErrSessionEnded, end)
	}
	c.pending[id] = ch
	c.mu.Unlock()
	forget := func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}
	written, err := c.write(ctx, func(b []byte) []byte { return appendRequest(b, id, method, params) })
	if err != nil {
		forget()
		switch {
		case ctx.Err() != nil:
			err = fmt.Errorf("%w (writing the request)", context.Cause(ctx))
		case errors.Is(err, syscall.EPIPE) || errors.Is(err, io.ErrClosedPipe) || errors.Is(err, os.ErrClosed):
			// The server closed its stdin (or exited): the session is over,
			// whether or not its stdout has ended yet.
			err = fmt.Errorf("%w: the server's stdin is closed: %v", ErrSessionEnded, err)
		}
		return reply{}, written, err
	}
	select {
	case r := <-ch:
		return r, true, nil
	case <-c.done:
		// A response read just before the end still counts.
		select {
		case r := <-ch:
			return r, true, nil
		default:
		}
		forget()
		return reply{}, true, c.end
	case <-ctx.Done():
		forget()
		return reply{}, true, context.Cause(ctx)
	}
}

// notify implements rpcConn.
func (c *lineConn) notify(ctx context.Context, method string, params json.RawMessage) error {
	select {
	case <-c.done:
		return fmt.Errorf("%w: %v", ErrSessionEnded, c.end)
	default:
	}
	_, err := c.write(ctx, func(b []byte) []byte { return appendNotification(b, method, params) })
	return err
}

// negotiated implements rpcConn: stdio carries no version header.
func (c *lineConn) negotiated(string) {}
