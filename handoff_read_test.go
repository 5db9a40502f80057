package pablo_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/model"
)

// readingModel is artifactModel whose reader reads the handed file: its
// first turn (optionally after the file is swapped, once the reader has
// started) calls fs.read of it, its second answers.
type readingModel struct {
	*artifactModel
	swapAfterStart bool
	mu             sync.Mutex
	readerTurns    int
}

const swappedReport = "a swapped report\n"

func (m *readingModel) Generate(ctx context.Context, req *model.Request, emit func(string) error) (*model.Response, error) {
	if req.Messages[0].Content != artifactReader {
		return m.artifactModel.Generate(ctx, req, emit)
	}
	m.mu.Lock()
	m.readerTurns++
	turn := m.readerTurns
	m.mu.Unlock()
	if turn == 1 {
		if m.swapAfterStart {
			// The reader passed its start check: the root's workspace
			// changes before the reader's read.
			os.WriteFile(filepath.Join(m.ws, "report.md"), []byte(swappedReport), 0o600)
		}
		return &model.Response{FinishReason: model.FinishToolCalls, ToolCalls: []model.ToolCall{{ID: "r1", Name: "fs_read", Arguments: json.RawMessage(`{"path":"report.md"}`)}}}, nil
	}
	return &model.Response{Text: "read it", FinishReason: model.FinishStop}, emit("read it")
}

// TestHandedArtifactIsRecheckedAtEachRead: an artifact handoff is checked
// when the receiving child starts and again on every read of the handed
// file. Swapped before the reader starts, the reader never runs; swapped
// after its start check and before its fs.read, the read is the
// recoverable artifact_changed, naming the path and both revisions, and
// not one byte of the swapped file reaches the reader; unchanged, the
// reader reads the handed bytes. (A swap during the read is
// internal/fstools' TestHandedFileSwappedDuringTheReadReturnsOnlyHandedBytes.)
func TestHandedArtifactIsRecheckedAtEachRead(t *testing.T) {
	handed, swapped := sha256.Sum256([]byte(artifactBody)), sha256.Sum256([]byte(swappedReport))
	for _, c := range []struct {
		name         string
		atStart      bool
		afterStart   bool
		readerTurns  int
		wantInResult []string
	}{
		{"unchanged", false, false, 2, []string{`"status":"completed"`, `"text":"the report\n"`}},
		{"swapped before the reader starts", true, false, 0, nil},
		{"swapped between the start check and the read", false, true, 2, []string{`"status":"recoverable_error"`, `"code":"` + string(pablo.CodeArtifactChanged) + `"`,
			`"path":"report.md"`, `"handed_revision":"` + hex.EncodeToString(handed[:]) + `"`, `"current_revision":"` + hex.EncodeToString(swapped[:]) + `"`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			ws := filepath.Join(dir, "work")
			os.Mkdir(ws, 0o700)
			os.WriteFile(filepath.Join(dir, "deployment.toml"), []byte("schema_version = 1\n[options.filesystem]\nwrite = true\n[options.shell]\nenabled = false\n[options.children]\nenabled = true\n"), 0o600)
			d, err := pablo.Load(pablo.LoadOptions{Config: filepath.Join(dir, "deployment.toml"), Bindings: map[string]string{"workspace": ws}})
			if err != nil {
				t.Fatal(err)
			}
			m := &readingModel{artifactModel: &artifactModel{ws: ws, stale: c.atStart, asked: map[string]int{}}, swapAfterStart: c.afterStart}
			rt, err := d.NewRuntime(context.Background(), pablo.HostOptions{Model: m})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			task, err := rt.Start(context.Background(), artifactRoot)
			if err != nil {
				t.Fatal(err)
			}
			var read string
			for ev := range task.Events() {
				if ev.Type == event.ToolFinished && ev.Name == "fs.read" && ev.Agent.Depth == 1 { // the reader's r1
					read = string(ev.Result)
				}
			}
			if obj := task.Wait(); obj.Outcome.Status != event.StatusCompleted {
				t.Fatalf("root outcome %+v", obj.Outcome)
			}
			if m.readerTurns != c.readerTurns {
				t.Fatalf("the reader's model was asked %d times, want %d", m.readerTurns, c.readerTurns)
			}
			for _, want := range c.wantInResult {
				if !strings.Contains(read, want) {
					t.Errorf("the reader's fs.read result %s lacks %s", read, want)
				}
			}
			if strings.Contains(read, "swapped report") {
				t.Errorf("the swapped bytes reached the reader: %s", read)
			}
		})
	}
}
