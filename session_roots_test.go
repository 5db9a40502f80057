package pablo_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/pabloagent/pablo"
)

// TestSessionsInManyProjectDirectories: with workspace roots, a session's
// cwd may be any directory inside one (the root itself included), and its
// prompts run on the runtime SessionRuntime returns for that directory; a
// directory outside every root, or any other directory with no
// SessionRuntime, is refused.
func TestSessionsInManyProjectDirectories(t *testing.T) {
	projects, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a, b := filepath.Join(projects, "a"), filepath.Join(projects, "b")
	os.Mkdir(a, 0o700)
	os.Mkdir(b, 0o700)
	var mu sync.Mutex
	var asked []string
	var own func(context.Context) (*pablo.Runtime, error)
	s, ws := sessionHandler(t, &echoModel{}, nil, func(o *pablo.SessionOptions) {
		own = o.Runtime
		o.WorkspaceRoots = []string{projects}
		o.SessionRuntime = func(ctx context.Context, spec pablo.SessionSpec) (*pablo.Runtime, error) {
			mu.Lock()
			asked = append(asked, spec.Workspace)
			mu.Unlock()
			return own(ctx)
		}
	})
	ctx := context.Background()
	for _, dir := range []string{a, b, projects, ws} {
		x, err := s.New(ctx, pablo.SessionRequest{Cwd: dir})
		if err != nil {
			t.Fatalf("a session in %s: %v", dir, err)
		}
		task, err := x.Prompt(ctx, "hello", nil)
		if err != nil {
			t.Fatal(err)
		}
		task.Wait()
	}
	if len(asked) != 3 || asked[0] != a || asked[1] != b || asked[2] != projects {
		t.Fatalf("SessionRuntime was asked for %v, want the three project directories (the bound workspace runs on Runtime)", asked)
	}
	_, err = s.New(ctx, pablo.SessionRequest{Cwd: t.TempDir()})
	wantSessionError(t, err, pablo.SessionInvalid)
	_, err = s.New(ctx, pablo.SessionRequest{Cwd: filepath.Dir(projects)})
	wantSessionError(t, err, pablo.SessionInvalid)

	// Without a SessionRuntime the roots admit nothing the host cannot run.
	s2, _ := sessionHandler(t, &echoModel{}, nil, func(o *pablo.SessionOptions) { o.WorkspaceRoots = []string{projects} })
	_, err = s2.New(ctx, pablo.SessionRequest{Cwd: a})
	wantSessionError(t, err, pablo.SessionInvalid)
}
