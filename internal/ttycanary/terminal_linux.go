package ttycanary

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Terminal is a pseudo-terminal pair: the terminal a command is given, and
// the controller the owner reads the screen from. What the terminal
// echoes is collected until Close, so the controller never fills and
// blocks a writer. The line discipline stays as a new terminal has it
// (canonical, echoing): a typed line is counted in the input queue once its
// newline arrives, and its echo reaches the screen even should a reader of
// the terminal take the line.
type Terminal struct {
	term, controller *os.File

	mu     sync.Mutex
	screen bytes.Buffer
	done   chan struct{}
}

// Open opens a new pseudo-terminal pair.
func Open() (*Terminal, error) {
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("no pseudo-terminal: %w", err)
	}
	n, err := ptsNumber(fd)
	if err == nil {
		// Non-blocking, so the runtime poller owns it and Close ends a read.
		err = unix.SetNonblock(fd, true)
	}
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("pseudo-terminal: %w", err)
	}
	t := &Terminal{controller: os.NewFile(uintptr(fd), "/dev/ptmx"), done: make(chan struct{})}
	t.term, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.controller.Close()
		return nil, fmt.Errorf("pseudo-terminal: %w", err)
	}
	go t.read()
	return t, nil
}

func ptsNumber(fd int) (int, error) {
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		return 0, err
	}
	return unix.IoctlGetInt(fd, unix.TIOCGPTN)
}

func (t *Terminal) read() {
	defer close(t.done)
	var buf [4096]byte
	for {
		n, err := t.controller.Read(buf[:])
		t.mu.Lock()
		t.screen.Write(buf[:n])
		t.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// Term is the terminal end, to hand to a command.
func (t *Terminal) Term() *os.File { return t.term }

// Attach gives cmd the terminal as a user's shell gives it to a job: as
// stdin and stdout, and as the controlling terminal of a new session the
// command leads (its stderr is left to the caller). cmd must be started
// with exec, not with internal/proc, which refuses a terminal.
func (t *Terminal) Attach(cmd *exec.Cmd) {
	cmd.Stdin, cmd.Stdout = t.term, t.term
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setsid, cmd.SysProcAttr.Setctty, cmd.SysProcAttr.Ctty = true, true, 0
}

// Typed reports whether anything typed the marker into the terminal: bytes
// waiting in its input queue, or the marker's echo on its screen. Call it
// once every process given the terminal has ended.
func (t *Terminal) Typed() (bool, error) {
	queued, err := unix.IoctlGetInt(int(t.term.Fd()), unix.TIOCINQ)
	if err != nil {
		return false, fmt.Errorf("input queue: %w", err)
	}
	t.mu.Lock()
	echoed := strings.Contains(t.screen.String(), strings.TrimSuffix(Marker, "\n"))
	t.mu.Unlock()
	return queued > 0 || echoed, nil
}

// Queued is the number of bytes in the terminal's input queue (TIOCINQ);
// in canonical mode, of its complete lines.
func (t *Terminal) Queued() (int, error) {
	return unix.IoctlGetInt(int(t.term.Fd()), unix.TIOCINQ)
}

// Screen is what the terminal showed so far.
func (t *Terminal) Screen() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.screen.String()
}

// Close closes both ends and joins the reader.
func (t *Terminal) Close() error {
	t.term.Close()
	err := t.controller.Close()
	<-t.done
	return err
}

func errnoName(e syscall.Errno) string {
	if n := unix.ErrnoName(e); n != "" {
		return n
	}
	return strconv.Itoa(int(e))
}
