package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/textinput"
	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/approval"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/termtext"
)

// tuiBackend is what the terminal UI drives: it starts a task for each
// submission and cancels the active one. What a task does comes back as
// messages (tuiStartedMsg, tuiEventMsg, tuiApprovalMsg, tuiDoneMsg), so the
// model is tested without a runtime or a terminal.
type tuiBackend interface {
	// Submit starts a task with input; its messages follow.
	Submit(input string)
	// Cancel cancels the active task; its tuiDoneMsg comes once the task
	// settled, after its owned cleanup.
	Cancel()
}

// The messages a task sends to the model.
type (
	// tuiEventMsg is one event of the active task.
	tuiEventMsg struct{ ev event.Event }
	// tuiDoneMsg ends the active task: its task object, or the error that
	// kept it from starting.
	tuiDoneMsg struct {
		obj *pablo.TaskObject
		err error
	}
	// tuiApprovalMsg is a call waiting for the user's answer; reply is
	// buffered, so answering never blocks.
	tuiApprovalMsg struct {
		req   approval.Request
		reply chan<- approval.Answer
	}
	// tuiApprovalGoneMsg withdraws a question the task no longer waits on
	// (it was cancelled, or timed out).
	tuiApprovalGoneMsg struct{ id string }
	// tuiSubmitMsg submits the command line's TASK at start.
	tuiSubmitMsg struct{ input string }
	// tuiTickMsg redraws the status line's elapsed time.
	tuiTickMsg struct{}
	// tuiFailedMsg ends the UI: a goroutine of the host failed (a panic),
	// and the terminal must be restored before it is reported.
	tuiFailedMsg struct{ err error }
)

// entryKind is what one entry of the retained history shows.
type entryKind int

const (
	entryPrompt  entryKind = iota // the user's submission
	entryAnswer                   // the root's Markdown answer
	entryTool                     // one tool call and how it ended
	entryNote                     // a line of the host's own: approvals, children, outcomes
	entryOutcome                  // how a task ended
)

// tuiEntry is one entry of the history. Every text in it is escaped
// (termtext) when it arrives, before any styling: what a model or a tool
// wrote never reaches the terminal as a control sequence.
type tuiEntry struct {
	kind  entryKind
	depth int // the agent's depth: children are drawn under their parent
	// text is the escaped text: the answer's Markdown, a tool's name and
	// arguments, a note.
	text   strings.Builder
	stream termtext.Stream // the answer's escaper, across deltas
	// status is a tool call's end ("" while it runs).
	status string
	// rendered caches the entry drawn at width.
	rendered string
	width    int
	dirty    bool
	// streaming marks an answer whose deltas still arrive. Its finished
	// blocks are drawn as Markdown once each (head holds them, drawn from
	// the first headLen bytes of text), the block being written as plain
	// text, so a long answer costs one render per block, not per delta.
	streaming bool
	head      string
	headLen   int
	headWidth int
}

// tuiModel is the Bubble Tea model of `pablo tui`: the retained history in
// a scrolling viewport, the in-place approval question, the live status
// line and the input line.
type tuiModel struct {
	backend tuiBackend
	now     func() time.Time
	// first is the TASK of the command line, submitted at start.
	first string

	width, height int
	input         textinput.Model
	history       viewport.Model
	// follow keeps the viewport at the live tail; scrolling up leaves it,
	// Ctrl-End and scrolling to the bottom return to it.
	follow  bool
	entries []*tuiEntry
	md      *mdRenderer
	mdWidth int
	// renders counts Markdown renders: what an answer's drawing costs.
	renders int

	running, cancelling bool
	started             time.Time
	modelCalls          int
	toolCalls           int
	// doing is what the task does now, for the status line.
	doing  string
	answer *tuiEntry                // the root answer being streamed
	tools  map[tuiCallKey]*tuiEntry // a call → its entry
	asks   []tuiApprovalMsg         // questions waiting, the first shown
	// err is why the UI ended on its own (a failed goroutine).
	err error
}

func newTUIModel(backend tuiBackend, now func() time.Time, first string) *tuiModel {
	in := textinput.New()
	in.Prompt = "› "
	in.Placeholder = "a task for pablo; Enter submits"
	in.CharLimit = 64 << 10
	in.Cursor.SetMode(cursor.CursorStatic)
	in.Focus()
	vp := viewport.New(80, 20)
	vp.MouseWheelEnabled = true
	// The keys are the model's own (PgUp, PgDn, Ctrl-End), so typing j or
	// k in the input never scrolls.
	vp.KeyMap = viewport.KeyMap{}
	return &tuiModel{backend: backend, now: now, first: first, width: 80, height: 24,
		input: in, history: vp, follow: true, tools: map[tuiCallKey]*tuiEntry{}}
}

var (
	tuiDim     = lipgloss.NewStyle().Faint(true)
	tuiPrompt  = lipgloss.NewStyle().Bold(true)
	tuiOK      = lipgloss.NewStyle().Foreground(lipgloss.Color("2"))
	tuiBad     = lipgloss.NewStyle().Foreground(lipgloss.Color("1"))
	tuiAsk     = lipgloss.NewStyle().Border(lipgloss.NormalBorder()).BorderForeground(lipgloss.Color("3")).Padding(0, 1)
	tuiStatusS = lipgloss.NewStyle().Reverse(true)
)

// Init implements tea.Model.
func (m *tuiModel) Init() tea.Cmd {
	if m.first != "" {
		first := m.first
		return func() tea.Msg { return tuiSubmitMsg{input: first} }
	}
	return nil
}

// tick redraws the elapsed time once a second while a task runs. The time
// shown is the model's clock's; the tick only asks for a redraw.
func tick() tea.Cmd {
	return tea.Tick(time.Second, func(time.Time) tea.Msg { return tuiTickMsg{} })
}

// Update implements tea.Model.
func (m *tuiModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	var cmds []tea.Cmd
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.input.Width = max(msg.Width-4, 1)
	case tea.KeyMsg:
		if cmd, done := m.key(msg); done {
			return m, cmd
		}
		var cmd tea.Cmd
		m.input, cmd = m.input.Update(msg)
		cmds = append(cmds, cmd)
	case tea.MouseMsg:
		var cmd tea.Cmd
		m.history, cmd = m.history.Update(msg)
		m.follow = m.history.AtBottom()
		cmds = append(cmds, cmd)
	case tuiEventMsg:
		m.event(msg.ev)
	case tuiApprovalMsg:
		m.asks = append(m.asks, msg)
	case tuiApprovalGoneMsg:
		for i, a := range m.asks {
			if a.req.ID == msg.id {
				m.asks = append(m.asks[:i:i], m.asks[i+1:]...)
				break
			}
		}
	case tuiDoneMsg:
		m.done(msg)
	case tuiSubmitMsg:
		if !m.running {
			m.submit(msg.input)
			cmds = append(cmds, tick())
		}
	case tuiTickMsg:
		if m.running {
			cmds = append(cmds, tick())
		}
	case tuiFailedMsg:
		m.err = msg.err
		return m, tea.Quit
	default:
		var cmd tea.Cmd
		m.input, cmd = m.input.Update(msg)
		cmds = append(cmds, cmd)
	}
	m.layout()
	return m, tea.Batch(cmds...)
}

// key handles the keys the model owns; done reports it consumed the key.
func (m *tuiModel) key(k tea.KeyMsg) (cmd tea.Cmd, done bool) {
	switch k.Type {
	case tea.KeyCtrlC:
		if !m.running {
			return tea.Quit, true
		}
		if !m.cancelling {
			m.cancelling = true
			m.backend.Cancel()
		}
		m.layout()
		return nil, true
	case tea.KeyPgUp:
		m.history.PageUp()
		m.follow = m.history.AtBottom()
		m.layout()
		return nil, true
	case tea.KeyPgDown:
		m.history.PageDown()
		m.follow = m.history.AtBottom()
		m.layout()
		return nil, true
	case tea.KeyCtrlEnd:
		m.follow = true
		m.layout()
		return nil, true
	}
	if len(m.asks) > 0 {
		// The question owns the keyboard: one of its four letters answers
		// it, any other key is ignored (never typed into the input, and
		// never taken for an answer).
		// Keys typed quickly arrive as one message of several runes: the
		// first letter that is an answer answers. A paste never does.
		if k.Type != tea.KeyRunes || k.Paste {
			return nil, true
		}
		var answer approval.Answer
		for _, r := range k.Runes {
			answer = approvalKey(r)
			if answer != "" {
				break
			}
		}
		if answer == "" {
			return nil, true
		}
		a := m.asks[0]
		m.asks = m.asks[1:]
		a.reply <- answer
		m.layout()
		return nil, true
	}
	if k.Type == tea.KeyEnter {
		input := m.input.Value()
		if strings.TrimSpace(input) == "" || m.running {
			return nil, true
		}
		m.input.Reset()
		m.submit(input)
		m.layout()
		return tick(), true
	}
	return nil, false
}

// approvalKey is the answer a key gives, or "".
func approvalKey(r rune) approval.Answer {
	switch r {
	case 'o':
		return approval.AllowOnce
	case 't':
		return approval.AllowForTask
	case 'r':
		return approval.Reject
	case 'x':
		return approval.RejectForTask
	}
	return ""
}

// submit starts a task: the prompt joins the history, the status line
// starts counting.
func (m *tuiModel) submit(input string) {
	e := m.add(entryPrompt, 0)
	e.text.Write(termtext.AppendPrintable(nil, input, true))
	m.running, m.cancelling = true, false
	m.started = m.now()
	m.modelCalls, m.toolCalls = 0, 0
	m.doing = "starting"
	m.answer = nil
	m.tools = map[tuiCallKey]*tuiEntry{}
	m.follow = true
	m.backend.Submit(input)
}

func (m *tuiModel) add(kind entryKind, depth int) *tuiEntry {
	e := &tuiEntry{kind: kind, depth: depth, dirty: true}
	m.entries = append(m.entries, e)
	return e
}

func (m *tuiModel) note(depth int, format string, args ...any) {
	e := m.add(entryNote, depth)
	e.text.WriteString(fmt.Sprintf(format, args...))
}

// tuiCallKey names a call in the task's tree: call IDs ("call_T_I") are
// each agent's own, so a child's first call has its parent's first
// call's ID.
type tuiCallKey struct{ agent, call string }

// event folds one event of the active task into the history and the
// status line.
func (m *tuiModel) event(ev event.Event) {
	depth := ev.Agent.Depth
	child := ""
	if depth > 0 {
		child = "child " + termtext.Printable(shorten(ev.Agent.AgentID, 8)) + " "
	}
	switch ev.Type {
	case event.RunStarted:
		if depth > 0 {
			m.note(depth, "└ %sstarted", child)
		}
	case event.ModelStarted:
		m.modelCalls++
		m.doing = child + termtext.Printable(ev.Provider+"/"+ev.Model) + " thinking"
	case event.TextDelta:
		if depth > 0 {
			return // a child's answer reaches the root as its tool result
		}
		if m.answer == nil {
			m.answer = m.add(entryAnswer, 0)
			m.answer.streaming = true
		}
		m.answer.text.Write(m.answer.stream.Append(nil, ev.Text))
		m.answer.dirty = true
		m.doing = "writing"
	case event.ToolStarted:
		m.toolCalls++
		m.endAnswer() // text after a call is a new answer
		e := m.add(entryTool, depth)
		fmt.Fprintf(&e.text, "%s%s %s", child, termtext.Printable(ev.Call.Name), termtext.Printable(truncate(string(ev.Call.Arguments), 200)))
		m.tools[tuiCallKey{ev.Agent.AgentID, ev.Call.ID}] = e
		m.doing = child + "→ " + termtext.Printable(ev.Call.Name)
	case event.ToolFinished:
		var r struct {
			Status string `json:"status"`
		}
		json.Unmarshal(ev.Result, &r)
		if e := m.tools[tuiCallKey{ev.Agent.AgentID, ev.CallID}]; e != nil {
			e.status = termtext.Printable(r.Status)
			e.dirty = true
		}
		m.doing = child + "← " + termtext.Printable(ev.Name)
	case event.ApprovalAnswered:
		if a := ev.Approval; a != nil {
			m.note(depth, "%sapproval %s: %s (%s)", child, termtext.Printable(a.Capability), termtext.Printable(a.Answer), termtext.Printable(a.Channel))
		}
	case event.SkillActivated:
		m.note(depth, "%sskill %s activated", child, termtext.Printable(ev.Skill.QualifiedName))
	case event.RunFinished:
		if depth > 0 && ev.Outcome != nil {
			m.note(depth, "└ %s%s", child, termtext.Printable(string(ev.Outcome.Status)))
		}
	}
}

// done ends the active task with its outcome line.
func (m *tuiModel) done(msg tuiDoneMsg) {
	m.running, m.cancelling = false, false
	m.asks = nil
	m.endAnswer()
	elapsed := m.now().Sub(m.started).Truncate(time.Second)
	e := m.add(entryOutcome, 0)
	if msg.err != nil {
		fmt.Fprintf(&e.text, "not started: %s", termtext.AppendPrintable(nil, message(msg.err), true))
		return
	}
	if msg.obj.Outcome == nil || msg.obj.Accounting == nil {
		why := "the task settled without an outcome"
		if msg.obj.Error != nil {
			why = msg.obj.Error.Message
		}
		fmt.Fprintf(&e.text, "not started: %s", termtext.AppendPrintable(nil, why, true))
		return
	}
	o := msg.obj.Outcome
	detail := ""
	switch o.Status {
	case event.StatusLimitExceeded:
		detail = " limit " + string(o.Limit)
	case event.StatusFailed:
		detail = " " + string(o.Code) + " (" + string(o.Delivery) + ")"
	}
	acc := msg.obj.Accounting
	fmt.Fprintf(&e.text, "%s%s · %s · %s · %s", o.Status, detail, elapsed, plural(acc.ModelCalls, "model call"), plural(acc.ToolCalls, "tool call"))
	if o.Reason != "" {
		fmt.Fprintf(&e.text, "\nwhy: %s", termtext.AppendPrintable(nil, o.Reason, true))
	}
	e.status = string(o.Status)
}

// replay shows an earlier turn of a continued session as it happened:
// its prompt, its events and how it ended. A turn cut off by a crash has
// no outcome; its calls whose outcome is unknown are named, never run
// again.
func (m *tuiModel) replay(turn pablo.SessionTurn) {
	defer m.layout()
	e := m.add(entryPrompt, 0)
	e.text.Write(termtext.AppendPrintable(nil, turn.Prompt, true))
	m.tools = map[tuiCallKey]*tuiEntry{}
	for _, ev := range turn.Events {
		m.event(ev)
	}
	m.endAnswer()
	o := m.add(entryOutcome, 0)
	if turn.Outcome == nil {
		fmt.Fprintf(&o.text, "cut off (%d calls of unknown outcome, not run again)", len(turn.Unknown))
		return
	}
	fmt.Fprintf(&o.text, "%s (earlier turn)", termtext.Printable(string(turn.Outcome.Status)))
	o.status = string(turn.Outcome.Status)
}

// statusLine is the live line under the history: what the task does and
// for how long, or what the keys do when idle.
func (m *tuiModel) statusLine() string {
	var s string
	switch {
	case m.cancelling:
		s = fmt.Sprintf("cancelling · %s · waiting for cleanup", m.elapsed())
	case m.running:
		doing := m.doing
		if len(m.asks) > 0 {
			doing = "waiting for your answer"
		}
		s = fmt.Sprintf("● %s · %s · %s · %s · Ctrl-C cancels", m.elapsed(), doing, plural(m.modelCalls, "model call"), plural(m.toolCalls, "tool call"))
	default:
		s = "ready · Enter submits · PgUp/PgDn scroll · Ctrl-End live tail · Ctrl-C exits"
	}
	if !m.follow {
		s = "↑ scrolled, Ctrl-End returns · " + s
	}
	return tuiStatusS.Render(padTo(s, m.width))
}

// elapsed is the active task's time so far, in whole seconds.
func (m *tuiModel) elapsed() time.Duration {
	return m.now().Sub(m.started).Truncate(time.Second)
}

// padTo fits s into one line of width cells.
func padTo(s string, width int) string {
	if w := lipgloss.Width(s); w < width {
		return s + strings.Repeat(" ", width-w)
	}
	return lipgloss.NewStyle().MaxWidth(width).Render(s)
}

// question is the approval box drawn in place of the input: the exact
// call, escaped, as `pablo run` asks it.
func (m *tuiModel) question() string {
	if len(m.asks) == 0 {
		return ""
	}
	text := strings.TrimSpace(approvalPrompt(m.asks[0].req))
	text = strings.TrimPrefix(text, "pablo: ")
	text = strings.TrimSuffix(text, ":")
	if n := len(m.asks) - 1; n > 0 {
		text += fmt.Sprintf("\n(%d more waiting)", n)
	}
	return tuiAsk.Width(max(m.width-2, 10)).Render(text)
}

// layout sizes the viewport to what is left of the screen and fills it
// with the history.
func (m *tuiModel) layout() {
	bottom := 1 // the status line
	ask := m.question()
	if ask != "" {
		bottom += lipgloss.Height(ask)
	} else {
		bottom++ // the input line
	}
	m.history.Width = m.width
	m.history.Height = max(m.height-bottom, 1)
	var b strings.Builder
	for i, e := range m.entries {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(m.render(e))
	}
	m.history.SetContent(b.String())
	if m.follow {
		m.history.GotoBottom()
	}
}

// render draws one entry at the current width, from its cache when
// nothing changed.
func (m *tuiModel) render(e *tuiEntry) string {
	if !e.dirty && e.width == m.width {
		return e.rendered
	}
	indent := strings.Repeat("│ ", e.depth)
	w := max(m.width-len(indent)*2/3-1, 10) // "│ " is two cells of three bytes and one
	var out string
	switch e.kind {
	case entryPrompt:
		out = tuiPrompt.Width(w).Render("› " + e.text.String())
	case entryAnswer:
		out = m.answerView(e, w)
	case entryTool:
		mark, tail := tuiDim.Render("⋯"), tuiDim.Render("running")
		switch e.status {
		case "":
		case "completed":
			mark, tail = tuiOK.Render("✓"), tuiOK.Render("completed")
		default:
			mark, tail = tuiBad.Render("✗"), tuiBad.Render(e.status)
		}
		out = lipgloss.NewStyle().Width(w).Render(mark + " " + e.text.String() + " " + tail)
	case entryNote:
		out = tuiDim.Width(w).Render(e.text.String())
	case entryOutcome:
		style := tuiBad
		if e.status == string(event.StatusCompleted) {
			style = tuiOK
		}
		out = style.Width(w).Render("■ " + e.text.String())
	}
	if indent != "" {
		lines := strings.Split(out, "\n")
		for i := range lines {
			lines[i] = tuiDim.Render(indent) + lines[i]
		}
		out = strings.Join(lines, "\n")
	}
	e.rendered, e.width, e.dirty = out, m.width, false
	return out
}

// answerView draws an answer: all of it as Markdown once it ended; while
// it streams, each finished block (up to a blank line outside a code
// fence) as Markdown, rendered once, and the block being written as it
// is. The whole answer is rendered again when it ends, so a list or a
// quote that spans blocks is drawn as one then.
func (m *tuiModel) answerView(e *tuiEntry, w int) string {
	text := e.text.String()
	if !e.streaming {
		return m.markdown(text)
	}
	if e.headWidth != m.width {
		e.head, e.headLen, e.headWidth = "", 0, m.width
	}
	for {
		cut := nextBlock(text, e.headLen)
		if cut < 0 {
			break
		}
		if block := strings.Trim(text[e.headLen:cut], "\n"); block != "" {
			if e.head != "" {
				e.head += "\n\n"
			}
			e.head += m.markdown(block)
		}
		e.headLen = cut
	}
	tail := strings.Trim(text[e.headLen:], "\n")
	switch {
	case tail == "":
		return e.head
	case e.head == "":
		return lipgloss.NewStyle().Width(w).PaddingLeft(2).Render(tail)
	}
	return e.head + "\n\n" + lipgloss.NewStyle().Width(w).PaddingLeft(2).Render(tail)
}

// nextBlock is the end of the Markdown block of text that starts at from
// (after its blank line), or -1 when the block is not finished: a blank
// line inside a code fence does not end one.
func nextBlock(text string, from int) int {
	fenced := false
	at := from
	for at < len(text) {
		nl := strings.IndexByte(text[at:], '\n')
		if nl < 0 {
			return -1
		}
		line := text[at : at+nl]
		at += nl + 1
		if t := strings.TrimSpace(line); strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fenced = !fenced
		}
		if !fenced && strings.TrimSpace(line) == "" && at-nl-1 > from {
			return at
		}
	}
	return -1
}

// endAnswer ends the answer being streamed: it is drawn as Markdown whole.
func (m *tuiModel) endAnswer() {
	if m.answer != nil {
		m.answer.streaming, m.answer.dirty = false, true
		m.answer = nil
	}
}

// markdown renders an answer, already escaped, as Markdown at the
// current width.
func (m *tuiModel) markdown(text string) string {
	if m.md == nil || m.mdWidth != m.width {
		m.md, m.mdWidth = newMDRenderer(max(m.width-4, 20)), m.width
	}
	m.renders++
	return strings.Trim(m.md.Render(text), "\n")
}

// View implements tea.Model.
func (m *tuiModel) View() string {
	var b strings.Builder
	b.WriteString(m.history.View())
	b.WriteByte('\n')
	if ask := m.question(); ask != "" {
		b.WriteString(ask)
		b.WriteByte('\n')
		b.WriteString(m.statusLine())
		return b.String()
	}
	b.WriteString(m.statusLine())
	b.WriteByte('\n')
	b.WriteString(m.input.View())
	return b.String()
}
