package tracefile

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/pabloagent/pablo/event"
)

// TestAuditLevelsDecideWhatATraceKeepsOfEachTool: the tool profile's level
// (metadata) keeps byte counts and a result's shape; a capability at
// content has its arguments, output and result captured without
// CaptureContent; one at none keeps its records' names and nothing of
// their content, no byte count and no tool.output; model text follows
// CaptureContent alone.
func TestAuditLevelsDecideWhatATraceKeepsOfEachTool(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	tw, err := Open(path, Options{ToolAudit: AuditMetadata, Audit: map[string]AuditLevel{"shell.run": AuditContent, "fs.read": AuditNone}})
	if err != nil {
		t.Fatal(err)
	}
	seq := uint64(0)
	write := func(ev event.Event) {
		t.Helper()
		if err := tw.Write(ev); err != nil {
			t.Fatal(err)
		}
	}
	for _, tool := range []string{"shell.run", "fs.list", "fs.read"} {
		seq++
		ev := testEvent(seq, event.ToolStarted)
		ev.Call = &event.Call{ID: "call_" + tool, Name: tool, Arguments: json.RawMessage(`{"path":"secret.txt"}`)}
		write(ev)
		seq++
		ev = testEvent(seq, event.ToolOutput)
		ev.CallID, ev.Name, ev.Stream, ev.Text = "call_"+tool, tool, "stdout", "the output"
		write(ev)
		seq++
		ev = testEvent(seq, event.ToolFinished)
		ev.CallID, ev.Name, ev.Result = "call_"+tool, tool, json.RawMessage(`{"status":"completed","text":"the result"}`)
		write(ev)
	}
	write(deltaEvent(seq+1, "model text"))
	write(finishedEvent(seq+2, "done"))
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	got := map[string]map[string]any{}
	for _, l := range parseLines(t, raw) {
		name, _ := l["name"].(string)
		if c, ok := l["call"].(map[string]any); ok {
			name, _ = c["name"].(string)
		}
		got[l["type"].(string)+" "+name] = l
	}
	str := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	for key, want := range map[string]string{
		"tool.started shell.run":  `{"arguments":{"path":"secret.txt"},"arguments_bytes":21,"id":"call_shell.run","name":"shell.run"}`,
		"tool.started fs.list":    `{"arguments":null,"arguments_bytes":21,"id":"call_fs.list","name":"fs.list"}`,
		"tool.started fs.read":    `{"arguments":null,"arguments_bytes":0,"id":"call_fs.read","name":"fs.read"}`,
		"tool.output shell.run":   `"the output"`,
		"tool.output fs.list":     `null`,
		"tool.finished shell.run": `{"status":"completed","text":"the result"}`,
		"tool.finished fs.list":   `{"status":"completed","text":null}`,
		"tool.finished fs.read":   `null`,
	} {
		l, ok := got[key]
		if !ok {
			t.Errorf("no %s record", key)
			continue
		}
		var v any
		switch {
		case l["call"] != nil:
			v = l["call"]
		case l["type"] == "tool.output":
			v = l["text"]
		default:
			v = l["result"]
		}
		if s := str(v); s != want {
			t.Errorf("%s: %s, want %s", key, s, want)
		}
	}
	if l := got["tool.finished fs.read"]; l != nil && l["result_bytes"] != float64(0) {
		t.Errorf("fs.read at none keeps its result's size: %v", l["result_bytes"])
	}
	if _, ok := got["tool.output fs.read"]; ok {
		t.Error("fs.read at none kept its tool.output")
	}
	if l, ok := got["assistant.text.delta "]; !ok || l["text"] != nil || l["text_bytes"] != float64(10) {
		t.Errorf("model text without CaptureContent: %v", l)
	}
}
