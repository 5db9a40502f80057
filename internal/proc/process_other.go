//go:build !unix

package proc

import (
	"context"
	"io"
	"os/exec"
)

// Process is one started process and the group it leads. Outside Unix no
// Process can be started.
type Process struct{}

// Start returns ErrUnsupportedPlatform outside Unix: there are no process
// groups to own.
func Start(ctx context.Context, cmd *exec.Cmd, opts Options) (*Process, error) {
	return nil, ErrUnsupportedPlatform
}

// Pid returns 0.
func (p *Process) Pid() int { return 0 }

// Pgid returns 0.
func (p *Process) Pgid() int { return 0 }

// Stdin returns nil.
func (p *Process) Stdin() io.WriteCloser { return nil }

// Stdout returns nil.
func (p *Process) Stdout() io.ReadCloser { return nil }

// Done returns a closed channel.
func (p *Process) Done() <-chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// Kill does nothing.
func (p *Process) Kill() error { return ErrUnsupportedPlatform }

// Wait returns ErrUnsupportedPlatform.
func (p *Process) Wait() (*Result, error) { return &Result{ExitCode: -1}, ErrUnsupportedPlatform }

// Close returns ErrUnsupportedPlatform.
func (p *Process) Close() error { return ErrUnsupportedPlatform }
