package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// tmuxTerm is a real terminal for the test: a tmux server of its own
// (its own socket, no user configuration), one pane running a script, driven
// by send-keys and read by capture-pane.
type tmuxTerm struct {
	t    *testing.T
	bin  string
	sock string
}

func newTmux(t *testing.T, dir string, width, height int, script string) *tmuxTerm {
	t.Helper()
	bin, err := exec.LookPath("tmux")
	if err != nil {
		// A real-peer test: a missing peer fails it, so the suite never
		// passes without the terminal UI tested; only PABLO_SKIP_PEERS=1
		// skips it.
		if os.Getenv("PABLO_SKIP_PEERS") == "1" {
			t.Skip("real-peer test skipped: PABLO_SKIP_PEERS=1")
		}
		t.Fatal("no tmux on PATH: install Debian's tmux package (scripts/install-peers.sh debian), or opt out with PABLO_SKIP_PEERS=1")
	}
	conf := filepath.Join(dir, "tmux.conf")
	// No status bar, so the pane is the whole window. The script keeps
	// its pane alive (a dead pane reports no cursor) until kill-server.
	os.WriteFile(conf, []byte("set -g status off\nset -g default-terminal tmux-256color\n"), 0o600)
	tm := &tmuxTerm{t: t, bin: bin, sock: filepath.Join(dir, "tmux.sock")}
	if out, err := exec.Command(bin, "-S", tm.sock, "-f", conf, "new-session", "-d", "-s", "t",
		"-x", strconv.Itoa(width), "-y", strconv.Itoa(height), "sh", script).CombinedOutput(); err != nil {
		t.Fatalf("tmux new-session: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command(bin, "-S", tm.sock, "kill-server").Run() })
	return tm
}

func (tm *tmuxTerm) tmux(args ...string) string {
	tm.t.Helper()
	out, err := exec.Command(tm.bin, append([]string{"-S", tm.sock}, args...)...).CombinedOutput()
	if err != nil {
		tm.t.Fatalf("tmux %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// keys types keys into the pane, as send-keys names them.
func (tm *tmuxTerm) keys(keys ...string) {
	tm.t.Helper()
	tm.tmux(append([]string{"send-keys", "-t", "t"}, keys...)...)
}

// screen is what the pane shows now.
func (tm *tmuxTerm) screen() string {
	tm.t.Helper()
	return tm.tmux("capture-pane", "-p", "-t", "t")
}

// waitFor polls the pane (with its history: the line a shell printed
// after the UI left may have scrolled off a resized pane) until every want
// is on it, up to a deadline
// generous for a loaded host: the poll returns as soon as the screen is
// there, so a fast run is fast.
func (tm *tmuxTerm) waitFor(want ...string) string {
	tm.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := tm.tmux("capture-pane", "-p", "-S", "-", "-t", "t")
		missing := ""
		for _, w := range want {
			if !strings.Contains(s, w) {
				missing = w
				break
			}
		}
		if missing == "" {
			return s
		}
		if time.Now().After(deadline) {
			tm.t.Fatalf("the terminal did not show %q within the deadline:\n%s", missing, s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitUntil polls the visible screen (no history: what scrolling shows)
// until ok holds, up to the same deadline as waitFor.
func (tm *tmuxTerm) waitUntil(what string, ok func(screen string) bool) string {
	tm.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := tm.screen()
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			tm.t.Fatalf("the terminal did not show %s within the deadline:\n%s", what, s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// format reads one of tmux's formats of the pane (#{alternate_on}).
func (tm *tmuxTerm) format(f string) string {
	tm.t.Helper()
	return strings.TrimSpace(tm.tmux("display-message", "-p", "-t", "t", f))
}

// TestTUIInARealTerminal drives `pablo tui` in tmux as a user would, with a
// scripted model (no network): bare `pablo` opening it, submit, a tool
// call and a subagent's child tree, an approval in place (the exact call,
// escaped), the live status line's elapsed time, scrolling (PgUp, the
// wheel, Ctrl-End), resize, Ctrl-C cancelling and exiting, SIGTERM. Each
// case ends with the terminal as it was before: the same stty modes, the
// alternate screen left, the cursor shown and mouse reporting off.
func TestTUIInARealTerminal(t *testing.T) {
	bin := buildPablo(t, t.TempDir())
	// A submission streams a Markdown answer whose model text holds a
	// terminal control (shown escaped), a tool call needs approval and the
	// question is drawn in place with the exact call, the answer runs the
	// call and its lifecycle is shown, the layout follows a resize, Ctrl-C
	// cancels a running task and then exits the idle UI.
	t.Run("SubmitApproveResizeCancelExit", func(t *testing.T) {
		t.Parallel()
		dir := tuiFixture(t)
		script := filepath.Join(dir, "run.sh")
		os.WriteFile(script, []byte(`cd "$(dirname "$0")"
stty -g > before
`+bin+` tui --config d.toml --bind workspace=work
echo "pablo exited $?"
stty -g > after
exec sleep 3600
`), 0o600)
		tm := newTmux(t, dir, 100, 30, script)
		tm.run(filepath.Join(dir, "work"))
		tm.restored(dir)
	})
	// A task given on the command line delegates to a subagent whose
	// call asks in place: the child's lifecycle is drawn indented under
	// the root's, the status line's elapsed time moves while the question
	// waits, and the retained history scrolls with PgUp, the wheel and
	// Ctrl-End.
	t.Run("ChildTreeElapsedAndScroll", func(t *testing.T) {
		t.Parallel()
		dir := tuiChildFixture(t)
		script := filepath.Join(dir, "run.sh")
		os.WriteFile(script, []byte(`cd "$(dirname "$0")"
stty -g > before
`+bin+` tui --config d.toml --bind workspace=work "delegate the notes"
echo "pablo exited $?"
stty -g > after
exec sleep 3600
`), 0o600)
		// 22 rows: the approval box takes 14, and the root's wait call
		// and the child's two lines may come in either order, so all
		// three stay in view; the answer's 24 items still overflow it.
		tm := newTmux(t, dir, 100, 22, script)
		tm.childTreeAndScroll()
		tm.restored(dir)
		if b, err := os.ReadFile(filepath.Join(dir, "work", "a.txt")); err != nil || string(b) != "hi" {
			t.Errorf("the child's approved call did not write the file: %v %q", err, b)
		}
	})
	// Bare `pablo` on a terminal is the UI in no-config mode: the
	// invocation directory is the workspace and the default user
	// configuration ($XDG_CONFIG_HOME/pablo/config.toml) names the model.
	t.Run("BarePabloOpensTheUI", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		os.MkdirAll(filepath.Join(dir, "xdg", "pablo"), 0o700)
		os.Mkdir(filepath.Join(dir, "work"), 0o700)
		os.WriteFile(filepath.Join(dir, "xdg", "pablo", "config.toml"), []byte("schema_version = 1\n[options.model]\nprovider = \"script\"\nscript = { base = \"workspace\", path = \"s.json\" }\n"), 0o600)
		os.WriteFile(filepath.Join(dir, "work", "s.json"), []byte(`{"turns":[{"text":["The **bare** answer."]}]}`), 0o600)
		script := filepath.Join(dir, "run.sh")
		os.WriteFile(script, []byte(`cd "$(dirname "$0")"
stty -g > before
cd work && XDG_CONFIG_HOME="$(dirname "$PWD")/xdg" `+bin+`
echo "pablo exited $?"
cd .. && stty -g > after
exec sleep 3600
`), 0o600)
		tm := newTmux(t, dir, 80, 20, script)
		tm.waitFor("ready · Enter submits")
		tm.keys("hello", "Enter")
		s := tm.waitFor("The bare answer.", "■ completed")
		if strings.Contains(s, "**") {
			t.Errorf("the answer is not rendered as Markdown:\n%s", s)
		}
		tm.keys("C-c")
		tm.waitFor("pablo exited 0")
		tm.restored(dir)
	})
	// SIGTERM while a task waits for an approval ends the UI with exit
	// 130, the task cancelled (its call never ran).
	t.Run("SIGTERMWhileAsked", func(t *testing.T) {
		t.Parallel()
		dir := tuiFixture(t)
		script := filepath.Join(dir, "run.sh")
		// The inner shell writes its own process ID and becomes pablo.
		os.WriteFile(script, []byte(`cd "$(dirname "$0")"
stty -g > before
sh -c 'echo $$ > pid; exec "$0" tui --config d.toml --bind workspace=work "write the notes"' `+bin+`
echo "pablo exited $?"
stty -g > after
exec sleep 3600
`), 0o600)
		tm := newTmux(t, dir, 100, 30, script)
		tm.waitFor("approval needed before this call runs", "● ")
		b, err := os.ReadFile(filepath.Join(dir, "pid"))
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		tm.waitFor("pablo exited 130")
		tm.restored(dir)
		if _, err := os.Stat(filepath.Join(dir, "work", "a.txt")); err == nil {
			t.Error("the call whose approval was pending ran")
		}
	})
}

// tuiFixture writes the deployment, its script and the workspace of a
// terminal UI test into a new directory.
func tuiFixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "work"), 0o700)
	os.WriteFile(filepath.Join(dir, "d.toml"), []byte("schema_version = 1\n[options.model]\nprovider = \"script\"\nscript = { base = \"source\", path = \"s.json\" }\n[options.filesystem]\nwrite = true\n[options.approvals]\nfilesystem_write = \"required\"\n"), 0o600)
	// Turn 0 writes (a clear-screen in its text, a clipboard write in the
	// call's arguments); turn 1 answers in Markdown. Each submission is a
	// new task, so each starts at turn 0.
	os.WriteFile(filepath.Join(dir, "s.json"), []byte(`{"turns":[
 {"text":["Writing the **notes** \u001b[2J now."],"tool_calls":[{"id":"c1","name":"fs_write","arguments":{"path":"a.txt","text":"hi \u001b]52;c;aGk=\u0007","expected_revision":null}}]},
 {"text":["# Done\n\nThe file **a.txt** ", "holds the notes.\n\n- one\n- two\n"]}
]}`), 0o600)
	return dir
}

// run is the user's session of TestTUIInARealTerminal.
func (tm *tmuxTerm) run(ws string) {
	t := tm.t
	t.Helper()
	tm.waitFor("ready · Enter submits")
	tm.keys("write the notes", "Enter")
	// The question and the events before it come by different ways (the
	// approver, the event stream): wait for both.
	tm.waitFor("approval needed before this call runs", "capability fs.write", "asked by   options.approvals rule options.approvals.filesystem_write",
		`Writing the notes \u001b[2J now.`, `"text":"hi \u001b]52;c;aGk=\u0007"`, "⋯ fs.write", "waiting for your answer")
	// Not an answer: ignored, the question stays.
	tm.keys("z")
	tm.keys("o")
	s := tm.waitFor("■ completed", "✓ fs.write", "approval fs.write: allow_once (tty)", "The file a.txt holds the notes.", "• one", "ready · Enter submits")
	if strings.Contains(s, "**") || strings.Contains(s, "# Done") {
		t.Errorf("the answer is not rendered as Markdown:\n%s", s)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "a.txt")); err != nil || !strings.HasPrefix(string(b), "hi ") {
		t.Errorf("the approved call did not write the file: %v %q", err, b)
	}

	// A narrower, shorter terminal: the history is wrapped again from
	// its top, and the status line and the input are drawn again at the
	// bottom, cut to the new width. tmux itself crops each line to the
	// new width and drops the top rows, so a screen that only looks cut
	// proves nothing, and the redraw comes when pablo reads SIGWINCH:
	// wait for the frame that only a redraw draws (the history's first
	// line back on top, the call's line wrapped with its end shown).
	tm.tmux("resize-window", "-t", "t", "-x", "60", "-y", "20")
	tm.waitUntil("the UI redrawn for 60x20", func(s string) bool {
		lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
		for i := range lines {
			lines[i] = strings.TrimRight(lines[i], " ")
		}
		return len(lines) == 20 && lines[0] == "› write the notes" &&
			slices.Contains(lines, `\u001b]52;c;aGk=\u0007","expected_revision":null} completed`) &&
			lines[18] == "ready · Enter submits · PgUp/PgDn scroll · Ctrl-End live tai" && strings.HasPrefix(lines[19], "› ")
	})

	// A second submission is a new task (turn 0 again); Ctrl-C while its
	// question waits cancels it, and the question goes away.
	tm.keys("again", "Enter")
	tm.waitFor("approval needed before this call runs", "● ")
	tm.keys("C-c")
	s = tm.waitFor("■ cancelled", "approval fs.write: unanswered", "ready · Enter submits")
	if strings.Contains(s, "approval needed") {
		t.Errorf("the question of a cancelled task is still shown:\n%s", s)
	}
	// Idle, Ctrl-C exits.
	tm.keys("C-c")
	tm.waitFor("pablo exited 0")
}

// restored checks that the terminal is as it was before pablo started: the
// same stty modes, the main screen, the cursor shown, no mouse reporting.
func (tm *tmuxTerm) restored(dir string) {
	t := tm.t
	t.Helper()
	tm.waitForFile(filepath.Join(dir, "after"))
	for f, want := range map[string]string{"#{alternate_on}": "0", "#{cursor_flag}": "1", "#{mouse_any_flag}": "0", "#{mouse_sgr_flag}": "0"} {
		if got := tm.format(f); got != want {
			t.Errorf("after exit %s = %s, want %s", f, got, want)
		}
	}
	before, _ := os.ReadFile(filepath.Join(dir, "before"))
	after, _ := os.ReadFile(filepath.Join(dir, "after"))
	if len(before) == 0 || string(before) != string(after) {
		t.Errorf("the terminal modes changed: stty -g %q before, %q after", before, after)
	}
}

// waitForFile waits for the pane's script to write path.
func (tm *tmuxTerm) waitForFile(path string) {
	tm.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
			return
		}
		if time.Now().After(deadline) {
			tm.t.Fatalf("%s was not written:\n%s", path, tm.screen())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// tuiChildFixture is tuiFixture's deployment with children enabled: the
// root spawns a child that writes a file (asking first), waits for it and
// answers with a list longer than the screen.
func tuiChildFixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "work"), 0o700)
	os.WriteFile(filepath.Join(dir, "d.toml"), []byte("schema_version = 1\n[options.model]\nprovider = \"script\"\nscript = { base = \"source\", path = \"s.json\" }\n[options.filesystem]\nwrite = true\n[options.approvals]\nfilesystem_write = \"required\"\n[options.children]\nenabled = true\n"), 0o600)
	var items strings.Builder
	for i := 1; i <= 24; i++ {
		items.WriteString("- item " + strconv.Itoa(i) + "\\n")
	}
	os.WriteFile(filepath.Join(dir, "s.json"), []byte(`{"turns":[
 {"text":["Delegating."],"tool_calls":[{"id":"s1","name":"subagent","arguments":{"action":"spawn","request":{"input":"write the notes","capabilities":{"tools":["fs.write"]}}}}]},
 {"tool_calls":[{"name":"subagent","arguments":{"action":"wait","agent_ids":["{{agent_id:s1}}"],"mode":"all","timeout_ms":60000}}]},
 {"text":["# Done\n\nThe child wrote **a.txt**.\n\n`+items.String()+`"]}
],"agents":[{"input":"write the notes","turns":[
 {"tool_calls":[{"name":"fs_write","arguments":{"path":"a.txt","text":"hi","expected_revision":null}}]},
 {"text":["written"]}
]}]}`), 0o600)
	return dir
}

// childTreeAndScroll is the user's session of ChildTreeElapsedAndScroll.
func (tm *tmuxTerm) childTreeAndScroll() {
	t := tm.t
	t.Helper()
	// The child's call waits for its answer, drawn under its parent.
	tm.waitFor("approval needed before this call runs", "│ └ child ", "│ ⋯ child ", "capability fs.write", "waiting for your answer")
	// The elapsed time moves while the question waits: the first frame
	// says 0s, a later one at least 1s.
	moving := regexp.MustCompile(`● [1-9][0-9]*s · waiting for your answer`)
	tm.waitUntil("the elapsed time past 0s", moving.MatchString)
	tm.keys("o")
	s := tm.waitUntil("the settled task at the live tail", func(s string) bool {
		return strings.Contains(s, "■ completed") && strings.Contains(s, "• item 24") && strings.Contains(s, "ready · Enter submits")
	})
	if strings.Contains(s, "scrolled") {
		t.Errorf("the live tail says it is scrolled:\n%s", s)
	}

	// PgUp leaves the tail; further up is the whole task, the child's
	// lifecycle indented under the root's calls.
	tm.keys("PPage")
	tm.waitUntil("PgUp leaving the tail", func(s string) bool {
		return strings.Contains(s, "↑ scrolled, Ctrl-End returns") && !strings.Contains(s, "• item 24")
	})
	tm.keys("PPage", "PPage", "PPage")
	ended := regexp.MustCompile(`│ └ child \S+ completed`)
	s = tm.waitUntil("the top of the history", func(s string) bool { return strings.Contains(s, "› delegate the notes") })
	for _, w := range []string{"✓ subagent {\"action\":\"spawn\"", "│ └ child ", "│ ✓ child ", "fs.write {\"path\":\"a.txt\"", "approval fs.write: allow_once (tty)"} {
		if !strings.Contains(s, w) {
			t.Errorf("the history does not show %q:\n%s", w, s)
		}
	}
	if !ended.MatchString(s) {
		t.Errorf("the history does not show the child's end:\n%s", s)
	}
	// Ctrl-End returns to the live tail.
	tm.keys("C-End")
	tm.waitUntil("Ctrl-End returning to the tail", func(s string) bool {
		return strings.Contains(s, "• item 24") && !strings.Contains(s, "scrolled")
	})
	// The wheel (an SGR mouse report of wheel-up, as a terminal sends
	// it) scrolls too.
	wheelUp := []string{"-H"}
	for range 3 {
		for _, b := range []byte("\x1b[<64;10;5M") {
			wheelUp = append(wheelUp, strconv.FormatInt(int64(b), 16))
		}
	}
	tm.keys(wheelUp...)
	tm.waitUntil("the wheel scrolling up", func(s string) bool {
		return strings.Contains(s, "↑ scrolled, Ctrl-End returns") && !strings.Contains(s, "• item 24")
	})
	tm.keys("C-End")
	tm.waitUntil("Ctrl-End returning to the tail", func(s string) bool { return strings.Contains(s, "• item 24") })
	tm.keys("C-c")
	tm.waitFor("pablo exited 0")
}
