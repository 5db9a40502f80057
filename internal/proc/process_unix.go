//go:build unix

package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Process is one started process and the group it leads. The owner must call
// Wait or Close exactly as it would for exec.Cmd; both may be called from
// several goroutines and return the same outcome.
type Process struct {
	cmd  *exec.Cmd
	pgid int
	opts Options

	stdin    *os.File    // our write end when PipeStdin
	stdout   *os.File    // our read end when PipeStdout
	captured [2]*os.File // our read ends of captured streams (nil when piped)
	cap      *capture

	killOnce sync.Once
	killCh   chan struct{}
	reasonMu sync.Mutex
	reason   End // first kill reason requested; guarded by reasonMu

	done      chan struct{}
	result    Result
	err       error
	closePipe sync.Once
}

// Start starts cmd as the leader of a new session and of its process
// group, and takes ownership of it. cmd must not have been started and must
// leave Stdin, Stdout and Stderr nil: the owner connects them as opts says
// (stdin is /dev/null or a pipe, never a terminal). Start sets
// cmd.SysProcAttr.Setsid, so the process has no controlling terminal
// (with [Options.SessionByCommand], Setpgid instead). When ctx is done the
// whole group is killed.
//
// Under a [Recorder] the command runs nothing before its group is
// recorded: Start rewrites cmd to start [GateProgram], which waits for a
// line on an inherited pipe and then executes cmd's program in the same
// process (the leader the recorder saw, with its parent-death signal),
// with cmd's environment and with cmd.Path as argv[0]. Such an
// environment holds only NAME=value entries with shell variable names,
// none beginning with __pablo_gate_. A host killed before the release
// closes the pipe, and the gate exits without running anything.
func Start(ctx context.Context, cmd *exec.Cmd, opts Options) (*Process, error) {
	// The command may not run before its group is recorded: the gate
	// shell holds it until the recorder returned. Start closes its end of
	// the gate whatever happens.
	var gate *os.File
	defer func() {
		if gate != nil {
			gate.Close()
		}
	}()
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	switch {
	case cmd == nil || cmd.Path == "":
		return nil, fmt.Errorf("%w: cmd and cmd.Path are required", ErrInvalidOptions)
	case cmd.Process != nil:
		return nil, fmt.Errorf("%w: cmd was already started", ErrInvalidOptions)
	case cmd.Stdin != nil || cmd.Stdout != nil || cmd.Stderr != nil:
		return nil, fmt.Errorf("%w: leave cmd.Stdin, cmd.Stdout and cmd.Stderr nil; use Options.PipeStdin, PipeStdout and the capture bounds", ErrInvalidOptions)
	case cmd.Cancel != nil || cmd.WaitDelay != 0:
		return nil, fmt.Errorf("%w: leave cmd.Cancel and cmd.WaitDelay unset; the owner cancels through ctx", ErrInvalidOptions)
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	if err := checkAttr(cmd.SysProcAttr); err != nil {
		return nil, err
	}
	// A new session makes the process the leader of its group (pgid =
	// pid, as Setpgid would) and leaves it without a controlling
	// terminal: it cannot open /dev/tty, and the kernel refuses it
	// TIOCSTI on the host's terminal, whose keystrokes the user's shell
	// would run once the host exits. (setpgid on a session leader fails,
	// so Setpgid stays unset.)
	session := !opts.SessionByCommand || cmd.SysProcAttr.Setsid
	cmd.SysProcAttr.Setsid = session
	cmd.SysProcAttr.Setpgid = !session
	cmd.SysProcAttr.Pgid = 0
	if err := ctx.Err(); err != nil {
		return nil, &StartError{Path: cmd.Path, Err: err}
	}

	rec := recorderOf(ctx)
	if !groupsIdentifiable {
		rec = nil
	}
	program := cmd.Path
	p := &Process{cmd: cmd, opts: opts, killCh: make(chan struct{}), done: make(chan struct{})}
	var childEnds, parentEnds []*os.File
	fail := func(err error) (*Process, error) {
		for _, f := range childEnds {
			f.Close()
		}
		for _, f := range parentEnds {
			f.Close()
		}
		return nil, &StartError{Path: program, Err: err}
	}
	if rec != nil {
		r, w, err := gateCommand(cmd)
		if err != nil {
			if errors.Is(err, ErrInvalidOptions) {
				return nil, err
			}
			return fail(err)
		}
		childEnds, gate = append(childEnds, r), w
	}
	if opts.PipeStdin {
		r, w, err := os.Pipe()
		if err != nil {
			return fail(err)
		}
		childEnds, parentEnds = append(childEnds, r), append(parentEnds, w)
		cmd.Stdin, p.stdin = r, w
	}
	for i := range 2 {
		r, w, err := os.Pipe()
		if err != nil {
			return fail(err)
		}
		childEnds, parentEnds = append(childEnds, w), append(parentEnds, r)
		if i == 0 {
			cmd.Stdout = w
			if opts.PipeStdout {
				p.stdout = r
				continue
			}
		} else {
			cmd.Stderr = w
		}
		p.captured[i] = r
	}
	if opts.PipeStdout {
		opts.MaxStdout = 0
		p.opts = opts
	}
	p.cap = newCapture(opts, p.overflow)

	if err := startOwned(cmd); err != nil {
		return fail(err)
	}
	for _, f := range childEnds {
		f.Close()
	}
	p.pgid = cmd.Process.Pid
	if rec != nil {
		// The group is recorded before its command runs; a group that
		// cannot be recorded is killed without its gate ever opening.
		g, err := Identify(p.pgid, program)
		if err == nil {
			err = rec(ctx, g)
		}
		if err != nil {
			_ = syscall.Kill(-p.pgid, syscall.SIGKILL)
			_ = cmd.Wait()
			for _, f := range parentEnds {
				f.Close()
			}
			return nil, &StartError{Path: program, Err: fmt.Errorf("recording the process group: %w", err)}
		}
	}
	if gate != nil {
		// A failed write means the gate is already gone without having
		// read the release, so the command never ran; Wait reports its
		// end like any other.
		_, _ = gate.WriteString(gateRelease)
	}

	var readers sync.WaitGroup
	for i, r := range p.captured {
		if r == nil {
			continue
		}
		readers.Add(1)
		go func() {
			defer readers.Done()
			p.cap.read(i, r)
		}()
	}
	readersDone := make(chan struct{})
	go func() {
		readers.Wait()
		close(readersDone)
	}()
	flushDone := make(chan struct{})
	if p.cap.stream {
		go func() {
			defer close(flushDone)
			p.cap.flush(readersDone)
		}()
	} else {
		close(flushDone)
	}
	go p.supervise(ctx, readersDone, flushDone)
	return p, nil
}

func (p *Process) overflow() {
	if p.opts.StopOnOverflow {
		p.kill(EndOutputLimit)
	}
}

func (p *Process) kill(reason End) {
	p.reasonMu.Lock()
	if p.reason == EndExited {
		p.reason = reason
	}
	p.reasonMu.Unlock()
	p.killOnce.Do(func() { close(p.killCh) })
}

func (p *Process) killReason() End {
	p.reasonMu.Lock()
	defer p.reasonMu.Unlock()
	return p.reason
}

// supervise waits for the end, tears the group down and records the outcome.
// It joins the readers and the streamer; only the leader's waiter can outlive
// it, and then only when the leader could not be reaped, which is reported.
func (p *Process) supervise(ctx context.Context, readersDone, flushDone <-chan struct{}) {
	defer close(p.done)
	waitCh := make(chan struct{})
	go func() {
		_ = p.cmd.Wait() // the exit status is read from ProcessState
		close(waitCh)
	}()

	reaped := false
	end := EndExited
	select {
	case <-waitCh:
		reaped = true
	case <-ctx.Done():
		end = EndCancelled
	case <-p.killCh:
		end = p.killReason()
	}
	// Kill the group even after a normal exit: background members of the
	// group must not outlive the command.
	_ = syscall.Kill(-p.pgid, syscall.SIGKILL)

	allowance := p.opts.CleanupAllowance
	deadline := time.Now().Add(allowance)
	timer := time.NewTimer(allowance)
	defer timer.Stop()
	problem := ""
	// When the allowance runs out, what the kernel says decides, not how
	// far this process's goroutines got: on a loaded host the leader's
	// waiter and the readers may simply not have run since the leader died
	// and the pipes' last writers closed. Either then finishes without
	// waiting on anything but the scheduler.
	late := timer.C
	if !reaped {
		select {
		case <-waitCh:
			reaped = true
		case <-timer.C:
			expired := make(chan time.Time, 1)
			expired <- time.Time{}
			late = expired // the timer fires once; the pipes' check is due too
			if exited(p.pgid) {
				<-waitCh
				reaped = true
			} else {
				problem = "leader_not_reaped"
			}
		}
	}
	if problem == "" {
		select {
		case <-readersDone:
		case <-late:
			if writersGone(p.captured[:]) {
				<-readersDone
			} else {
				problem = "pipes_held_open"
			}
		}
	}
	// Unblock readers still waiting on a pipe held by a stray process.
	for _, r := range p.captured {
		if r != nil {
			_ = r.SetReadDeadline(time.Now())
		}
	}
	<-readersDone
	<-flushDone
	for _, r := range p.captured {
		if r != nil {
			r.Close()
		}
	}
	initPid := 0
	if problem == "" && reaped && p.opts.NamespaceInit != nil {
		initPid = p.opts.NamespaceInit()
	}
	if problem == "" && !groupGone(p.pgid, initPid, deadline) {
		problem = "group_alive"
	}

	if end == EndExited && p.killReason() == EndOutputLimit {
		end = EndOutputLimit
	}
	res := Result{ExitCode: -1, End: end, Pgid: p.pgid}
	p.cap.result(&res)
	if reaped && p.cmd.ProcessState != nil {
		if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); ok {
			switch {
			case ws.Exited():
				res.ExitCode = ws.ExitStatus()
			case ws.Signaled():
				res.Signal = signalName(ws.Signal())
			}
		}
	}
	p.result = res
	if problem != "" {
		p.err = &CleanupError{Pgid: p.pgid, Problem: problem, Allowance: allowance}
	}
}

// groupGone probes the group until kill(-pgid, 0) reports ESRCH (or only
// zombies remain) or the deadline passes. With initPid, the namespace
// init that holds every other process the leader started is awaited
// instead: once it has exited, the kernel has killed and reaped every
// process of its namespace.
func groupGone(pgid, initPid int, deadline time.Time) bool {
	if initPid > 0 {
		// The init leads a session of its own (bubblewrap's
		// --new-session), out of the group kill's reach: it dies of its
		// parent-death signal, sent when the leader died.
		if gone, ok := awaitInit(initPid, pgid, deadline); ok {
			return gone || !initAlive(initPid, pgid)
		}
		return probeUntil(deadline, func() bool { return !initAlive(initPid, pgid) })
	}
	return probeUntil(deadline, func() bool {
		return syscall.Kill(-pgid, 0) == syscall.ESRCH || onlyZombies(pgid)
	})
}

// probeUntil calls done on a short backoff until it reports true or the
// deadline passes.
func probeUntil(deadline time.Time, done func() bool) bool {
	backoff := 200 * time.Microsecond
	for {
		if done() {
			return true
		}
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		time.Sleep(min(backoff, left))
		backoff = min(2*backoff, 20*time.Millisecond)
	}
}

// Pid returns the leader's process ID.
func (p *Process) Pid() int { return p.pgid }

// Pgid returns the ID of the process group the process leads.
func (p *Process) Pgid() int { return p.pgid }

// Stdin returns the writer to the child's stdin, or nil without
// Options.PipeStdin. Closing it sends EOF to the child. Wait closes it.
func (p *Process) Stdin() io.WriteCloser {
	if p.stdin == nil {
		return nil
	}
	return p.stdin
}

// Stdout returns the reader on the child's stdout, or nil without
// Options.PipeStdout. Wait closes it, so read to EOF first when all output
// matters.
func (p *Process) Stdout() io.ReadCloser {
	if p.stdout == nil {
		return nil
	}
	return p.stdout
}

// Done is closed once the process group has been torn down and Wait will
// not block.
func (p *Process) Done() <-chan struct{} { return p.done }

// Kill asks the owner to end the process: the group is killed with SIGKILL
// and torn down as for any other end. It does not wait; call Wait.
func (p *Process) Kill() error {
	p.kill(EndKilled)
	return nil
}

// Wait blocks until the process has ended and its group has been torn down,
// then returns the result. The error is nil or a *CleanupError; the result
// is valid either way. A nonzero exit is not an error.
func (p *Process) Wait() (*Result, error) {
	<-p.done
	p.closePipe.Do(func() {
		if p.stdin != nil {
			p.stdin.Close()
		}
		if p.stdout != nil {
			p.stdout.Close()
		}
	})
	res := p.result
	return &res, p.err
}

// Close kills the process and waits for its teardown, returning any cleanup
// error.
func (p *Process) Close() error {
	_ = p.Kill()
	_, err := p.Wait()
	return err
}

func checkAttr(a *syscall.SysProcAttr) error {
	if a.Setctty || a.Foreground {
		return fmt.Errorf("%w: SysProcAttr.Setctty and Foreground would give the process a terminal; leave them unset (Start makes it lead a new session, with none)", ErrInvalidOptions)
	}
	return nil
}
