package sandbox

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/pabloagent/pablo/internal/ttycanary"
)

// maxProbeStderr bounds what the terminal canaries keep of the program's
// stderr: its one report line, or bubblewrap's message.
const maxProbeStderr = 1 << 16

// probeTerminal runs ttycanary.Program once under p with a
// pseudo-terminal of the probe's own as bubblewrap's controlling terminal,
// stdin and stdout: where a user's terminal would be, had the host not
// started the call in a session of its own (internal/proc does), so the
// canary sees the sandbox's layers alone. It reports two canaries:
// "type_into_terminal" (the terminal's input queue stayed empty; the new
// session keeps the command off the terminal, and the seccomp filter
// refuses TIOCSTI) and "terminal_ioctl" (TIOCSTI, TIOCLINUX and TIOCSTI
// with high bits, asked of /dev/null, are refused with EPERM, which only
// the seccomp filter answers: the kernel says ENOTTY). Without perl in the
// sandbox, or a pseudo-terminal on the host, both are skipped; so is
// terminal_ioctl where the launcher has no filter for this architecture.
func probeTerminal(ctx context.Context, l *Launcher, p Profile, ws string) ([]Canary, error) {
	typed := Canary{Name: "type_into_terminal"}
	filtered := Canary{Name: "terminal_ioctl"}
	skip := func(why string) ([]Canary, error) {
		typed.Skipped, typed.Detail = true, why
		filtered.Skipped, filtered.Detail = true, why
		return []Canary{typed, filtered}, nil
	}
	tty, err := ttycanary.Open()
	if err != nil {
		return skip(err.Error())
	}
	defer tty.Close()
	ctx, cancel := context.WithTimeout(ctx, probeAllowance)
	defer cancel()
	c, err := l.Command(p, Spec{Path: "/bin/sh", Args: []string{"/bin/sh", "-c", ttycanary.Program}, Env: []string{"PATH=/usr/bin:/bin", "LANG=C"}, Workspace: ws})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	stderr := &boundedBuffer{max: maxProbeStderr}
	c.Cmd.Stderr = stderr
	tty.Attach(c.Cmd)
	c.Cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	// Nothing the program starts outlives it (perl is exec'd, and the
	// sandbox's PID namespace ends with it); the delay only bounds a
	// holder of stderr we do not know of.
	c.Cmd.WaitDelay = time.Second
	if err := c.Cmd.Start(); err != nil {
		return nil, &SetupError{Detail: shortErr(err)}
	}
	c.Started()
	stop := context.AfterFunc(ctx, func() { _ = c.Cmd.Process.Signal(os.Kill) })
	waitErr := c.Cmd.Wait()
	stop()
	if err := c.Finish(stderr.Bytes()); err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("sandbox: the terminal canary did not end within %v", probeAllowance)
	}
	rep, ok := ttycanary.ParseReport(stderr.Bytes())
	if !ok {
		if rep != nil {
			return skip("no perl in the sandbox to try the injection with")
		}
		return nil, fmt.Errorf("sandbox: the terminal canary wrote no report (%v): %s", waitErr, bwrapMessage(stderr.Bytes()))
	}
	queued, err := tty.Typed()
	if err != nil {
		return nil, err
	}
	typed.Blocked = !queued && !rep.Typed()
	typed.Detail = fmt.Sprintf("TIOCSTI into bubblewrap's controlling terminal as stdin, stdout and /dev/tty (%s %s %s)", rep["fd0"], rep["fd1"], rep["tty"])
	if p.Mode != Off && l.filter == nil {
		filtered.Skipped, filtered.Detail = true, "no seccomp filter is built for this architecture"
	} else {
		filtered.Blocked = rep["null"] == "EPERM" && rep["linux"] == "EPERM" && rep["high"] == "EPERM"
		filtered.Detail = fmt.Sprintf("TIOCSTI, TIOCLINUX and TIOCSTI with high bits asked of /dev/null (%s %s %s; EPERM is the filter's, the kernel says ENOTTY)", rep["null"], rep["linux"], rep["high"])
	}
	return []Canary{typed, filtered}, nil
}

// boundedBuffer keeps the first max bytes written to it.
type boundedBuffer struct {
	max int
	b   []byte
}

func (w *boundedBuffer) Write(p []byte) (int, error) {
	if room := w.max - len(w.b); room > 0 {
		w.b = append(w.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (w *boundedBuffer) Bytes() []byte { return w.b }
