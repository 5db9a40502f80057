package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
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

// pablo resume continues an interrupted task from its bbolt store:
// the write settled before the stop is not done again, and the task
// object's resume record lists it among the completed calls.
func TestResumeCommandContinuesAnInterruptedTask(t *testing.T) {
	dir := t.TempDir()
	cfg, ws, script := resumeFiles(t, dir)
	store := filepath.Join(dir, "ledger.db")
	id := interruptedTask(t, store, cfg, ws, script)
	os.WriteFile(filepath.Join(ws, "note.txt"), []byte("kept\n"), 0o600)
	code, out, errOut := cli(t, "resume", id, "--json", "--store", store, "--script", script, "--config", cfg, "--bind", "workspace="+ws)
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	var obj pablo.TaskObject
	if err := json.Unmarshal([]byte(out), &obj); err != nil {
		t.Fatal(err)
	}
	if obj.Outcome.Status != "completed" || obj.Resume == nil || len(obj.Resume.Completed) != 1 || *obj.RunID != id {
		t.Fatalf("task object %s", out)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "note.txt")); string(b) != "kept\n" {
		t.Fatalf("the settled write ran again: %q", b)
	}
	// Settled now: a second resume is task_settled, exit 2.
	code, out, _ = cli(t, "resume", id, "--json", "--store", store, "--script", script, "--config", cfg, "--bind", "workspace="+ws)
	if code != 2 || !strings.Contains(out, `"code":"task_settled"`) {
		t.Fatalf("second resume: exit %d, %s", code, out)
	}
}

// A bbolt store is leased whole by the process that holds its file
// lock: resuming one of its tasks while that process runs exits 3,
// like `ledger recover` of a live lease.
func TestResumeCommandOfALiveTaskExits3(t *testing.T) {
	dir := t.TempDir()
	cfg, ws, script := resumeFiles(t, dir)
	store := filepath.Join(dir, "ledger.db")
	id := interruptedTask(t, store, cfg, ws, script)
	held, err := ledger.OpenBolt(store, ledger.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	code, out, errOut := cli(t, "resume", id, "--json", "--store", store, "--script", script, "--config", cfg, "--bind", "workspace="+ws)
	if code != 3 || !strings.Contains(out, `"code":"lease_live"`) {
		t.Fatalf("exit %d, %s %s", code, out, errOut)
	}
}

// Under options.audit fs.write = "none" the ledger keeps no content of
// the write: `pablo ledger show --json` and the store's file hold
// neither its text nor its result, the call's settlement references
// the not-retained marker, and `pablo resume` continues the task
// without writing again.
func TestResumeCommandOfACallAtAuditLevelNone(t *testing.T) {
	dir := t.TempDir()
	cfg, ws, script := resumeFiles(t, dir)
	body, _ := os.ReadFile(cfg)
	os.WriteFile(cfg, append(body, "[options.audit]\ncapabilities = { \"fs.write\" = \"none\" }\n"...), 0o600)
	store := filepath.Join(dir, "ledger.db")
	id := interruptedTask(t, store, cfg, ws, script)
	os.WriteFile(filepath.Join(ws, "note.txt"), []byte("kept\n"), 0o600)
	code, out, errOut := cli(t, "resume", id, "--json", "--store", store, "--script", script, "--config", cfg, "--bind", "workspace="+ws)
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "note.txt")); string(b) != "kept\n" {
		t.Fatalf("the settled write ran again: %q", b)
	}
	_, show, _ := cli(t, "ledger", "show", "--json", "--store", store, id)
	var rep struct {
		Tasks []ledger.TaskReport `json:"tasks"`
	}
	if err := json.Unmarshal([]byte(show), &rep); err != nil || len(rep.Tasks) != 1 {
		t.Fatalf("ledger show --json: %v %s", err, show)
	}
	var write *ledger.CallReport
	for i, c := range rep.Tasks[0].Completed {
		if c.Name == "fs.write" {
			write = &rep.Tasks[0].Completed[i]
		}
	}
	if write == nil || write.Status != "completed" || write.Result == "" {
		t.Fatalf("ledger show --json has no settled fs.write: %s", show)
	}
	b, err := ledger.OpenBolt(store, ledger.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	data, err := b.Result(context.Background(), write.Result)
	b.Close()
	if err != nil || !strings.Contains(string(data), `"not_retained":{"audit_level":"none"`) {
		t.Fatalf("the write's settled result %s (%v), want the not-retained marker", data, err)
	}
	raw, _ := os.ReadFile(store)
	for _, leak := range []string{"hello", "note.txt"} {
		if strings.Contains(show, leak) || strings.Contains(string(raw), leak) {
			t.Errorf("the ledger holds the write's %q", leak)
		}
	}
}
