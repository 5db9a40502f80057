package fstools

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Workspace is the opened workspace directory of one root task, shared by
// the root and its children. It holds the one mutation gate through which
// every fs.write and fs.edit of the task tree passes, one at a time. It is
// safe for concurrent use.
type Workspace struct {
	dir  string
	root *os.Root
	gate chan struct{}
}

// Open resolves dir to a real absolute directory (following symlinks in dir
// itself, once) and opens it as the workspace. All later access is relative
// to the opened handle.
func Open(dir string) (*Workspace, error) {
	if dir == "" {
		return nil, errors.New("fstools: workspace directory must not be empty")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("fstools: workspace %q: %w", dir, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("fstools: workspace %q does not resolve to an existing directory: %w", dir, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return nil, fmt.Errorf("fstools: workspace %q: %w", dir, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("fstools: workspace %q is not a directory", dir)
	}
	root, err := os.OpenRoot(real)
	if err != nil {
		return nil, fmt.Errorf("fstools: open workspace %q: %w", dir, err)
	}
	return &Workspace{dir: real, root: root, gate: make(chan struct{}, 1)}, nil
}

// Dir returns the resolved absolute workspace directory.
func (w *Workspace) Dir() string { return w.dir }

// Close releases the workspace handle. Calls made after Close fail with
// io_error.
func (w *Workspace) Close() error { return w.root.Close() }

// Root returns the opened workspace, for checks that must open inside it
// as the tools do (the artifact handoffs of children).
func (w *Workspace) Root() *os.Root { return w.root }

// lock takes the mutation gate, or gives up when ctx is done.
func (w *Workspace) lock(ctx context.Context) error {
	select {
	case w.gate <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (w *Workspace) unlock() { <-w.gate }
