package main

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/approval"
	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/ledger/outcome"
)

// fakeTasks is a tuiBackend that records what the model asked of it.
type fakeTasks struct {
	submitted []string
	cancels   int
}

func (f *fakeTasks) Submit(input string) { f.submitted = append(f.submitted, input) }
func (f *fakeTasks) Cancel()             { f.cancels++ }

// fakeClock is the model's clock, moved by the test.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func newTestModel(t *testing.T) (*tuiModel, *fakeTasks, *fakeClock) {
	t.Helper()
	f := &fakeTasks{}
	c := &fakeClock{t: time.Date(2026, 12, 5, 3, 0, 0, 0, time.UTC)}
	m := newTUIModel(f, c.now, "")
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	return m, f, c
}

// sgr is the UI's own styling, stripped where a test reads the text.
var sgr = regexp.MustCompile("\x1b\\[[0-9;]*m")

// plain is the model's view without its styling.
func plain(m *tuiModel) string { return sgr.ReplaceAllString(m.View(), "") }

func keyRunes(s string) tea.KeyMsg { return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s)} }

// submitTyped types s into the input and presses Enter.
func submitTyped(m *tuiModel, s string) tea.Cmd {
	m.Update(keyRunes(s))
	_, cmd := m.Update(tea.KeyMsg{Type: tea.KeyEnter})
	return cmd
}

func rootEvent(d event.EventData) tuiEventMsg {
	return tuiEventMsg{ev: event.Event{Agent: event.AgentRef{AgentID: "root-agent"}, EventData: d}}
}

func childEvent(d event.EventData) tuiEventMsg {
	return tuiEventMsg{ev: event.Event{Agent: event.AgentRef{AgentID: "child123456", ParentAgentID: "root-agent", Depth: 1}, EventData: d}}
}

func doneMsg(status outcome.Status) tuiDoneMsg {
	id := "run_1"
	return tuiDoneMsg{obj: &pablo.TaskObject{RunID: &id, Outcome: &event.Outcome{Status: status}, Accounting: &ledger.Accounting{ModelCalls: ledger.Count{N: 2}, ToolCalls: ledger.Count{N: 1}}}}
}

// TestTUIModelSubmitStreamsAndSettles: Enter submits the typed text as a
// new task; the status line counts the elapsed time on the model's clock
// (no timer decides it) and what the task does; the answer's deltas are
// drawn as Markdown; the outcome line ends the task and the UI is ready
// again.
func TestTUIModelSubmitStreamsAndSettles(t *testing.T) {
	m, f, c := newTestModel(t)
	if !strings.Contains(plain(m), "ready · Enter submits") {
		t.Fatalf("an idle UI does not say what Enter does:\n%s", plain(m))
	}
	if cmd := submitTyped(m, "summarize the notes"); cmd == nil {
		t.Error("a submission starts no status tick")
	}
	if strings.Join(f.submitted, "|") != "summarize the notes" {
		t.Fatalf("submitted %q", f.submitted)
	}
	// A second Enter while the task runs starts nothing.
	submitTyped(m, "more")
	if len(f.submitted) != 1 {
		t.Fatalf("a submission while a task runs started another: %q", f.submitted)
	}
	m.Update(rootEvent(event.EventData{Type: event.ModelStarted, Provider: "script", Model: "replay"}))
	c.t = c.t.Add(12*time.Second + 400*time.Millisecond)
	m.Update(tuiTickMsg{})
	v := plain(m)
	for _, w := range []string{"● 12s", "script/replay thinking", "1 model call", "Ctrl-C cancels", "› summarize the notes"} {
		if !strings.Contains(v, w) {
			t.Errorf("the running view does not show %q:\n%s", w, v)
		}
	}
	m.Update(rootEvent(event.EventData{Type: event.TextDelta, Text: "# Result\n\nThe total is **42**"}))
	m.Update(rootEvent(event.EventData{Type: event.TextDelta, Text: ".\n\n- first\n- second\n"}))
	c.t = c.t.Add(time.Second)
	m.Update(doneMsg(event.StatusCompleted))
	v = plain(m)
	for _, w := range []string{"The total is 42.", "• first", "■ completed · 13s · 2 model calls · 1 tool call", "ready · Enter submits"} {
		if !strings.Contains(v, w) {
			t.Errorf("the settled view does not show %q:\n%s", w, v)
		}
	}
	if strings.Contains(v, "**42**") || strings.Contains(v, "# Result") {
		t.Errorf("the answer is not rendered as Markdown:\n%s", v)
	}
	// What was typed while the task ran stays in the input; Enter now
	// submits it as a new task.
	m.Update(tea.KeyMsg{Type: tea.KeyEnter})
	if len(f.submitted) != 2 || f.submitted[1] != "more" {
		t.Errorf("the second submission: %q", f.submitted)
	}
}

// TestTUIModelEscapesWhatModelsAndToolsWrote: a control sequence in a
// model's text, a tool call's name and arguments, or a child's ID reaches
// the view as its escape, never as the control; the styling around it is
// the UI's own.
func TestTUIModelEscapesWhatModelsAndToolsWrote(t *testing.T) {
	m, _, _ := newTestModel(t)
	submitTyped(m, "go")
	m.Update(rootEvent(event.EventData{Type: event.TextDelta, Text: "clip \x1b]52;c;aGk="}))
	m.Update(rootEvent(event.EventData{Type: event.TextDelta, Text: "\x07 and \u202e reversed \u009b2J"}))
	m.Update(rootEvent(event.EventData{Type: event.ToolStarted, Call: &event.Call{ID: "call_1", Name: "shell.run\x1b[31m", Arguments: json.RawMessage(`{"command":"echo \u001b[2J"}`)}}))
	m.Update(childEvent(event.EventData{Type: event.RunStarted}))
	v := plain(m)
	for _, w := range []string{`\u001b]52;c;aGk=\u0007`, `\u202e`, `\u009b2J`, `shell.run\u001b[31m`} {
		if !strings.Contains(v, w) {
			t.Errorf("the view does not show %q escaped:\n%s", w, v)
		}
	}
	// The UI's own styling is SGR; none of these is.
	raw := m.View()
	for _, bad := range []string{"\x1b[2J", "\x1b]52", "\x07", "\u202e", "\u009b", "shell.run\x1b[31m"} {
		if strings.Contains(raw, bad) {
			t.Errorf("the view holds the raw control %q:\n%q", bad, raw)
		}
	}
}

// TestTUIModelToolLifecycleAndChildTree: a tool call is shown running,
// then with how it ended; a subagent's events are drawn indented under
// the root, its ID named, its own calls and its outcome beside them.
func TestTUIModelToolLifecycleAndChildTree(t *testing.T) {
	m, _, _ := newTestModel(t)
	submitTyped(m, "delegate")
	m.Update(rootEvent(event.EventData{Type: event.ToolStarted, Call: &event.Call{ID: "call_1_1", Name: "subagent", Arguments: json.RawMessage(`{"action":"spawn"}`)}}))
	if v := plain(m); !strings.Contains(v, `⋯ subagent {"action":"spawn"} running`) || !strings.Contains(v, "→ subagent") {
		t.Errorf("a started call is not shown running:\n%s", v)
	}
	m.Update(childEvent(event.EventData{Type: event.RunStarted}))
	m.Update(childEvent(event.EventData{Type: event.TextDelta, Text: "child text stays out of the answer"}))
	m.Update(childEvent(event.EventData{Type: event.ToolStarted, Call: &event.Call{ID: "call_2_1", Name: "fs.read", Arguments: json.RawMessage(`{"path":"a.md"}`)}}))
	m.Update(childEvent(event.EventData{Type: event.ToolFinished, CallID: "call_2_1", Name: "fs.read", Result: json.RawMessage(`{"status":"recoverable_error"}`)}))
	m.Update(childEvent(event.EventData{Type: event.RunFinished, Outcome: &event.Outcome{Status: event.StatusCompleted}}))
	m.Update(rootEvent(event.EventData{Type: event.ToolFinished, CallID: "call_1_1", Name: "subagent", Result: json.RawMessage(`{"status":"completed"}`)}))
	v := plain(m)
	for _, w := range []string{
		`✓ subagent {"action":"spawn"} completed`,
		"│ └ child child123… started",
		`│ ✗ child child123… fs.read {"path":"a.md"} recoverable_error`,
		"│ └ child child123… completed",
	} {
		if !strings.Contains(v, w) {
			t.Errorf("the view does not show %q:\n%s", w, v)
		}
	}
	if strings.Contains(v, "child text stays out") {
		t.Errorf("a child's text is shown as the answer:\n%s", v)
	}
}

// TestTUIModelApprovalInPlace: a call's question replaces the input with
// the exact call (escaped); keys that are not one of its four answers are
// ignored, a paste never answers, the first answer letter answers; the
// next waiting question follows; a withdrawn question goes away.
func TestTUIModelApprovalInPlace(t *testing.T) {
	m, _, _ := newTestModel(t)
	submitTyped(m, "write")
	req := approval.Request{ID: "apr_1", CallID: "call_1_1", AgentID: "root-agent", Tool: "fs.write", Effect: "write",
		Arguments: json.RawMessage(`{"path":"a.txt","text":"\u001b[2J"}`), Resources: []authority.Resource{{Kind: "write", Value: "a.txt"}}}
	first := make(chan approval.Answer, 1)
	second := make(chan approval.Answer, 1)
	m.Update(tuiApprovalMsg{req: req, reply: first})
	req2 := req
	req2.ID, req2.CallID = "apr_2", "call_1_2"
	m.Update(tuiApprovalMsg{req: req2, reply: second})
	v := plain(m)
	for _, w := range []string{"approval needed before this call runs", "request    apr_1", "capability fs.write", `"text":"\u001b[2J"`,
		"resource   write a.txt", "o = allow once", "(1 more waiting)", "waiting for your answer"} {
		if !strings.Contains(v, w) {
			t.Errorf("the question does not show %q:\n%s", w, v)
		}
	}
	if strings.Contains(v, "› ") && strings.Contains(v, "Enter submits") {
		t.Errorf("the input is drawn beside the question:\n%s", v)
	}
	m.Update(keyRunes("z"))
	m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("o"), Paste: true})
	m.Update(tea.KeyMsg{Type: tea.KeyEnter})
	select {
	case a := <-first:
		t.Fatalf("a key that is not an answer answered %s", a)
	default:
	}
	m.Update(keyRunes("zt")) // typed quickly: one message
	if a := <-first; a != approval.AllowForTask {
		t.Fatalf("answered %s, want allow_for_task", a)
	}
	if v := plain(m); !strings.Contains(v, "request    apr_2") || strings.Contains(v, "more waiting") {
		t.Errorf("the next question is not shown:\n%s", v)
	}
	m.Update(tuiApprovalGoneMsg{id: "apr_2"})
	if v := plain(m); strings.Contains(v, "approval needed") {
		t.Errorf("a withdrawn question is still shown:\n%s", v)
	}
	if m.input.Value() != "" {
		t.Errorf("answer keys reached the input: %q", m.input.Value())
	}
}

// TestTUIModelCtrlC: Ctrl-C while a task runs cancels it once and keeps
// the UI (it waits for the task to settle); Ctrl-C when idle quits.
func TestTUIModelCtrlC(t *testing.T) {
	m, f, _ := newTestModel(t)
	submitTyped(m, "long")
	_, cmd := m.Update(tea.KeyMsg{Type: tea.KeyCtrlC})
	if cmd != nil {
		if _, quit := cmd().(tea.QuitMsg); quit {
			t.Fatal("Ctrl-C while a task runs quit the UI")
		}
	}
	m.Update(tea.KeyMsg{Type: tea.KeyCtrlC})
	if f.cancels != 1 {
		t.Errorf("cancelled %d times, want 1", f.cancels)
	}
	if v := plain(m); !strings.Contains(v, "cancelling") || !strings.Contains(v, "waiting for cleanup") {
		t.Errorf("a cancelling task is not shown so:\n%s", v)
	}
	m.Update(doneMsg(event.StatusCancelled))
	if v := plain(m); !strings.Contains(v, "■ cancelled") || !strings.Contains(v, "ready") {
		t.Errorf("the settled cancel is not shown:\n%s", v)
	}
	_, cmd = m.Update(tea.KeyMsg{Type: tea.KeyCtrlC})
	if cmd == nil {
		t.Fatal("Ctrl-C when idle does not quit")
	}
	if _, quit := cmd().(tea.QuitMsg); !quit {
		t.Fatal("Ctrl-C when idle does not quit")
	}
}

// TestTUIModelScrollsRetainedHistory: the history is retained; PgUp
// leaves the live tail (new output does not pull the view down), Ctrl-End
// returns to it; a resize lays the screen out again at the new size.
func TestTUIModelScrollsRetainedHistory(t *testing.T) {
	m, _, _ := newTestModel(t)
	for i := range 30 {
		submitTyped(m, "task "+itoaTest(i))
		m.Update(doneMsg(event.StatusCompleted))
	}
	if v := plain(m); !strings.Contains(v, "task 29") || strings.Contains(v, "task 0\n") {
		t.Fatalf("the live tail does not show the newest entries:\n%s", v)
	}
	m.Update(tea.KeyMsg{Type: tea.KeyPgUp})
	m.Update(tea.KeyMsg{Type: tea.KeyPgUp})
	v := plain(m)
	if strings.Contains(v, "task 29") || !strings.Contains(v, "↑ scrolled, Ctrl-End returns") {
		t.Errorf("PgUp did not leave the tail:\n%s", v)
	}
	submitTyped(m, "newest")
	if strings.Contains(plain(m), "› newest") {
		// A submission returns to the tail: the user wants to see it.
	} else {
		t.Errorf("a submission did not return to the tail:\n%s", plain(m))
	}
	m.Update(doneMsg(event.StatusCompleted))
	m.Update(tea.KeyMsg{Type: tea.KeyPgUp})
	m.Update(tea.KeyMsg{Type: tea.KeyCtrlEnd})
	if v := plain(m); !strings.Contains(v, "› newest") || strings.Contains(v, "scrolled") {
		t.Errorf("Ctrl-End did not return to the tail:\n%s", v)
	}
	// Retained: scrolling to the top shows the first submission.
	for range 40 {
		m.Update(tea.KeyMsg{Type: tea.KeyPgUp})
	}
	if v := plain(m); !strings.Contains(v, "› task 0") {
		t.Errorf("the oldest entry is not retained:\n%s", v)
	}
	m.Update(tea.KeyMsg{Type: tea.KeyCtrlEnd})
	m.Update(tea.WindowSizeMsg{Width: 40, Height: 10})
	lines := strings.Split(plain(m), "\n")
	if len(lines) != 10 || !strings.HasPrefix(lines[9], "› ") {
		t.Errorf("after a resize to 40×10 the view has %d lines, the input last:\n%s", len(lines), plain(m))
	}
	for _, l := range lines {
		if w := lipglossWidth(l); w > 40 {
			t.Errorf("a line of %d cells on a 40-cell terminal: %q", w, l)
		}
	}
}

func itoaTest(i int) string { return strconv.Itoa(i) }

func lipglossWidth(s string) int { return lipgloss.Width(s) }

// TestTUIModelLongAnswerRendersEachBlockOnce: a streamed answer's Markdown
// is rendered once per finished block, not once per delta (a 32 KB answer
// in 16-byte deltas re-rendered whole at every delta took half a minute),
// a code fence's blank line does not end a block, and the whole answer is
// rendered once more when it ends.
func TestTUIModelLongAnswerRendersEachBlockOnce(t *testing.T) {
	m, _, _ := newTestModel(t)
	submitTyped(m, "go")
	const blocks = 40
	para := strings.Repeat("word ", 40) + "\n\n"
	text := strings.Repeat(para, blocks-1) + "```\ncode\n\nmore code\n```\n"
	for i := 0; i < len(text); i += 16 {
		m.Update(rootEvent(event.EventData{Type: event.TextDelta, Text: text[i:min(i+16, len(text))]}))
	}
	if m.renders > blocks {
		t.Errorf("%d Markdown renders while %d blocks streamed in %d deltas, want at most one a block", m.renders, blocks, (len(text)+15)/16)
	}
	if v := plain(m); !strings.Contains(v, "more code") {
		t.Errorf("the streaming answer's last block is not shown:\n%s", v)
	}
	before := m.renders
	m.Update(doneMsg(outcome.Completed))
	if m.renders != before+1 {
		t.Errorf("the ended answer was rendered %d times, want once", m.renders-before)
	}
}

// TestTUIModelKeepsAChildsCallApartFromItsParentsOfOneID: call IDs are
// each agent's own ("call_1_0" is every agent's first call), so a child's
// call that starts before its parent's call of the same ID finishes is a
// different line: each finish settles its own agent's line.
func TestTUIModelKeepsAChildsCallApartFromItsParentsOfOneID(t *testing.T) {
	m, _, _ := newTestModel(t)
	submitTyped(m, "delegate")
	m.Update(rootEvent(event.EventData{Type: event.ToolStarted, Call: &event.Call{ID: "call_1_0", Name: "subagent", Arguments: json.RawMessage(`{"action":"spawn"}`)}}))
	m.Update(childEvent(event.EventData{Type: event.ToolStarted, Call: &event.Call{ID: "call_1_0", Name: "fs.write", Arguments: json.RawMessage(`{"path":"a.txt"}`)}}))
	m.Update(rootEvent(event.EventData{Type: event.ToolFinished, CallID: "call_1_0", Name: "subagent", Result: json.RawMessage(`{"status":"completed"}`)}))
	v := plain(m)
	if !strings.Contains(v, `✓ subagent {"action":"spawn"} completed`) || !strings.Contains(v, `│ ⋯ child child123… fs.write {"path":"a.txt"} running`) {
		t.Errorf("the parent's finish did not settle its own line only:\n%s", v)
	}
	m.Update(childEvent(event.EventData{Type: event.ToolFinished, CallID: "call_1_0", Name: "fs.write", Result: json.RawMessage(`{"status":"completed"}`)}))
	if v := plain(m); !strings.Contains(v, `│ ✓ child child123… fs.write {"path":"a.txt"} completed`) {
		t.Errorf("the child's finish did not settle its line:\n%s", v)
	}
}
