package acp_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/acp"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/model"
)

// readingModel reads evidence.md until its turns are spent, then answers;
// a request with no tools (a compaction's summary) gets a summary.
type readingModel struct {
	turns int
	calls atomic.Int64 // the normal requests so far, which number the calls
}

func (m *readingModel) Info() model.Info {
	return model.Info{Provider: "test", Model: "reader"}
}

func (m *readingModel) Generate(_ context.Context, req *model.Request, emit func(string) error) (*model.Response, error) {
	if len(req.Tools) == 0 {
		return &model.Response{Text: "SUMMARY-TEXT: the page was read.", FinishReason: model.FinishStop}, nil
	}
	reads := int(m.calls.Add(1)) - 1
	if reads >= m.turns {
		emit("paid")
		return &model.Response{Text: "paid", FinishReason: model.FinishStop}, nil
	}
	return &model.Response{FinishReason: model.FinishToolCalls,
		ToolCalls: []model.ToolCall{{ID: "call_" + strconv.Itoa(reads), Name: "fs_read", Arguments: json.RawMessage(`{"path":"evidence.md"}`)}}}, nil
}

// pablo/compaction-v1 sends each compaction's start and finish as
// _pablo/v1/compaction, with its record and the summary as null; the
// pablo/v2 correlation carries the same record as its compaction member.
func TestCompactionExtension(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	os.WriteFile(filepath.Join(ws, "evidence.md"), []byte(strings.Repeat("INV-1042 paid. ", 70)), 0o600)
	os.WriteFile(filepath.Join(dir, "script.json"), []byte(`{"turns":[{"text":["unused"]}]}`), 0o600)
	doc := "schema_version = 1\n[options.model]\nprovider = \"script\"\nscript = { base = \"source\", path = \"script.json\" }\n" +
		"[options.shell]\nenabled = false\n[options.context]\nenabled = true\n[options.limits]\nmax_context_bytes = 9000\n"
	os.WriteFile(filepath.Join(dir, "deployment.toml"), []byte(doc), 0o600)
	d, err := pablo.Load(pablo.LoadOptions{Config: filepath.Join(dir, "deployment.toml"), Bindings: map[string]string{"workspace": ws}})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := d.NewRuntime(context.Background(), pablo.HostOptions{Model: &readingModel{turns: 8}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	sessions, err := pablo.NewSessions(pablo.SessionOptions{Runtime: func(context.Context) (*pablo.Runtime, error) { return rt, nil }})
	if err != nil {
		t.Fatal(err)
	}
	p := serve(t, sessions, acp.Options{Clock: newFakeClock()})
	p.initialize(acp.ExtV2, acp.ExtCompaction)
	sid := p.newSession(2, ws)
	p.request(3, "session/prompt", textPrompt(sid, "Was it paid?"))
	frames, answer := p.until(3)
	var types []string
	for _, f := range frames {
		if strings.Contains(f.raw, "SUMMARY-TEXT") {
			t.Fatalf("the summary in a frame: %s", f.raw)
		}
		if f.Method != acp.MethodCompaction {
			continue
		}
		var n struct {
			Type            string           `json:"type"`
			Compaction      event.Compaction `json:"compaction"`
			Summary         *string          `json:"summary"`
			SummaryBytes    string           `json:"summary_bytes"`
			ContentRedacted bool             `json:"content_redacted"`
			V2              json.RawMessage  `json:"pablo/v2"`
		}
		jsonUnmarshal(t, f.Params, &n)
		if n.Summary != nil || !n.ContentRedacted || n.Compaction.SchemaVersion != "compaction-v1" || len(n.V2) == 0 {
			t.Fatalf("compaction notification %s", f.raw)
		}
		var meta struct {
			Compaction *event.Compaction `json:"compaction"`
		}
		jsonUnmarshal(t, n.V2, &meta)
		if meta.Compaction == nil || !reflect.DeepEqual(*meta.Compaction, n.Compaction) {
			t.Fatalf("the pablo/v2 correlation lacks the compaction record: %s", f.raw)
		}
		types = append(types, n.Type+"/"+n.Compaction.Status)
		if n.Type == "context.compaction.finished" && n.SummaryBytes != "32" {
			t.Fatalf("summary_bytes %s in %s", n.SummaryBytes, f.raw)
		}
	}
	if len(types) < 2 || types[0] != "context.compaction.started/running" || types[1] != "context.compaction.finished/completed" {
		t.Fatalf("compaction notifications %v", types)
	}
	if stopReasonOf(t, answer) != "end_turn" {
		t.Fatalf("answer %s", answer.raw)
	}
}
