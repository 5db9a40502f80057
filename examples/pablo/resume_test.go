package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/ledger"
)

// resumeScript writes a note, then answers.
const resumeScript = `{"turns":[{"tool_calls":[{"name":"fs_write","arguments":{"path":"note.txt","text":"hello\n","expected_revision":null}}]},{"text":["done"]}]}`

// stopAfterWrite is a store whose host stops right after the barrier that
// settles the task's first tool call: the write is durable, the rest of
// the task is not, as a kill -9 at that point would leave it.
type stopAfterWrite struct {
	ledger.Store
	dead atomic.Bool
}

func (s *stopAfterWrite) Append(ctx context.Context, recs []ledger.Record) error {
	if s.dead.Load() {
		return errors.New("test: the host stopped")
	}
	err := s.Store.Append(ctx, recs)
	for _, r := range recs {
		if c := r.Call; r.Kind == ledger.RecordCall && c != nil && c.Kind == ledger.ToolCallKind && c.State == ledger.CallSettled {
			s.dead.Store(true)
		}
	}
	return err
}

// interruptedTask leaves in the bbolt store at path a task of the
// deployment cfg (over workspace ws, model script) whose host stopped
// after its write, and returns its ID.
func interruptedTask(t *testing.T, path, cfg, ws, script string) string {
	t.Helper()
	ctx := context.Background()
	d, err := pablo.Load(pablo.LoadOptions{Config: cfg, Bindings: map[string]string{"workspace": ws}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := ledger.OpenBolt(path, ledger.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	s, err := pablo.LoadScript(ctx, script)
	if err != nil {
		t.Fatal(err)
	}
	store := &stopAfterWrite{Store: b}
	rt, err := d.NewRuntime(ctx, pablo.HostOptions{Model: pablo.NewScriptModel(s), Store: store})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	task, err := rt.Start(ctx, "write the note")
	if err != nil {
		t.Fatal(err)
	}
	task.Wait()
	if !store.dead.Load() {
		t.Fatal("the host never stopped")
	}
	return task.ID()
}

// resumeFiles writes a deployment with workspace writes on and the
// resume script into dir.
func resumeFiles(t *testing.T, dir string) (cfg, ws, script string) {
	t.Helper()
	cfg, ws, script = filepath.Join(dir, "resume.toml"), filepath.Join(dir, "resume-work"), filepath.Join(dir, "resume.json")
	os.Mkdir(ws, 0o700)
	os.WriteFile(cfg, []byte("schema_version = 1\n[options.shell]\nenabled = false\n[options.filesystem]\nwrite = true\n"), 0o600)
	os.WriteFile(script, []byte(resumeScript), 0o600)
	return cfg, ws, script
}
