package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/model"
)

// TestTUINeedsACapableTerminal: `pablo tui` runs only with a terminal as
// stdin and stdout and a TERM that can draw it; otherwise it exits 2
// saying which is missing, before loading anything.
func TestTUINeedsACapableTerminal(t *testing.T) {
	term, _ := openPTY(t)
	pipeR, pipeW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pipeR.Close()
	defer pipeW.Close()
	env := func(term string) func(string) (string, bool) {
		return func(k string) (string, bool) {
			if k == "TERM" && term != "" {
				return term, true
			}
			return "", false
		}
	}
	cases := []struct {
		name   string
		stdin  *os.File
		stdout *os.File
		term   string
		want   string
	}{
		{"StdinAPipe", pipeR, term, "xterm-256color", "stdin is not one"},
		{"StdoutAPipe", term, pipeW, "xterm-256color", "stdout is not one"},
		{"DumbTerm", term, term, "dumb", `TERM is "dumb"`},
		{"NoTerm", term, term, "", `TERM is ""`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var errb bytes.Buffer
			code := run(context.Background(), []string{"tui", "--config", "missing.toml"},
				&host{stdin: c.stdin, stdout: c.stdout, stderr: &errb, lookupEnv: env(c.term), workDir: t.TempDir()})
			if code != 2 || !strings.Contains(errb.String(), "pablo tui needs a terminal") || !strings.Contains(errb.String(), c.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, errb.String(), c.want)
			}
		})
	}
	// Bare `pablo` on a terminal that cannot draw the UI keeps printing
	// the usage; on a capable one it is `pablo tui` in no-config mode (the
	// invocation directory the workspace, the default model), which here
	// stops before drawing anything for want of the model's credential.
	var out, errb bytes.Buffer
	if code := run(context.Background(), nil, &host{stdin: term, stdout: &out, stderr: &errb, lookupEnv: env("dumb")}); code != 0 || !strings.Contains(out.String(), "usage: pablo COMMAND") {
		t.Errorf("bare pablo with TERM=dumb: exit %d, %q", code, out.String())
	}
	errb.Reset()
	if code := run(context.Background(), nil, &host{stdin: term, stdout: term, stderr: &errb, lookupEnv: env("xterm-256color"), workDir: t.TempDir()}); code != 2 || !strings.Contains(errb.String(), "set it with: export AI_GATEWAY_API_KEY=") {
		t.Errorf("bare pablo on a capable terminal: exit %d, %q; want the tui in no-config mode, asking for the default model's credential", code, errb.String())
	}
}

// historyModel answers every request with the number of user messages it
// was sent, and records it.
type historyModel struct {
	mu    sync.Mutex
	users []int
}

func (*historyModel) Info() model.Info { return model.Info{Provider: "test", Model: "history"} }

func (h *historyModel) Generate(_ context.Context, req *model.Request, emit func(string) error) (*model.Response, error) {
	n := 0
	for _, m := range req.Messages {
		if m.Role == model.RoleUser {
			n++
		}
	}
	h.mu.Lock()
	h.users = append(h.users, n)
	h.mu.Unlock()
	text := "seen " + strings.Repeat("|", n)
	if err := emit(text); err != nil {
		return nil, err
	}
	return &model.Response{Text: text, FinishReason: model.FinishStop}, nil
}

// TestTUISessionCarriesEarlierPrompts: with --session new, each submission
// is the next prompt of one session, sent with the earlier prompts and
// answers, and its events name that session; without it each submission
// is a new task with fresh context, its own session. --session ID in a
// later process continues the session from the ledger: its earlier turns
// are shown again and the next prompt carries them; an ID without
// --store is a usage error.
func TestTUISessionCarriesEarlierPrompts(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	cfg := filepath.Join(dir, "d.toml")
	os.WriteFile(cfg, []byte("schema_version = 1\n"), 0o600)
	d, err := pablo.LoadContext(ctx, pablo.LoadOptions{Config: cfg, Bindings: map[string]string{"workspace": ws}, WorkDir: dir, LookupEnv: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	// submit runs each input as the UI would and returns each task's
	// session ID and the user messages the model saw.
	submit := func(t *testing.T, store ledger.Store, session string, inputs ...string) (sessions []string, users []int, replayed *tuiModel) {
		t.Helper()
		hm := &historyModel{}
		rt, err := d.NewRuntime(ctx, pablo.HostOptions{Model: hm, Store: store})
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close()
		msgs := make(chan tea.Msg, 1024)
		tasks := &tuiTasks{ctx: ctx, send: func(m tea.Msg) { msgs <- m }}
		tasks.start = func(ctx context.Context, input string, a pablo.Approver) (*pablo.Task, error) {
			return rt.StartTask(ctx, pablo.TaskRequest{Input: input, Approver: a})
		}
		replayed, _, _ = newTestModel(t)
		if session != "" {
			s, turns, err := tuiSession(ctx, &host{}, d, rt, store, session, "")
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for _, turn := range turns {
				replayed.replay(turn)
			}
			tasks.start = func(ctx context.Context, input string, a pablo.Approver) (*pablo.Task, error) {
				return s.Prompt(ctx, input, a)
			}
		}
		for _, input := range inputs {
			tasks.Submit(input)
			for done := false; !done; {
				switch m := (<-msgs).(type) {
				case tuiEventMsg:
					if m.ev.Type == "run.started" {
						sessions = append(sessions, m.ev.SessionID)
					}
				case tuiDoneMsg:
					if m.err != nil || m.obj.Outcome.Status != "completed" {
						t.Fatalf("session %q, %s: %v %+v", session, input, m.err, m.obj)
					}
					done = true
				}
			}
		}
		tasks.wait()
		return sessions, hm.users, replayed
	}

	sessions, users, _ := submit(t, nil, "", "first", "second")
	if fmt.Sprint(users) != "[1 1]" || sessions[0] == sessions[1] {
		t.Errorf("without --session: the model saw %v user messages, sessions %q; want [1 1] and two sessions", users, sessions)
	}
	store, err := ledger.OpenBolt(filepath.Join(dir, "ledger.db"), ledger.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	sessions, users, _ = submit(t, store, "new", "first", "second")
	if fmt.Sprint(users) != "[1 2]" || sessions[0] != sessions[1] {
		t.Errorf("--session new: the model saw %v user messages, sessions %q; want [1 2] and one session", users, sessions)
	}
	again, users, replayed := submit(t, store, sessions[0], "third")
	if fmt.Sprint(users) != "[3]" || again[0] != sessions[0] {
		t.Errorf("--session ID: the model saw %v user messages in session %q; want [3] in %q", users, again, sessions[0])
	}
	v := plain(replayed)
	for _, w := range []string{"› first", "seen |", "› second", "seen ||", "completed (earlier turn)"} {
		if !strings.Contains(v, w) {
			t.Errorf("the continued session does not show %q again:\n%s", w, v)
		}
	}
	if _, _, err := tuiSession(ctx, &host{}, d, nil, nil, sessions[0], ""); err == nil || !strings.Contains(err.Error(), "give its --store") {
		t.Errorf("--session ID without --store: %v", err)
	}
}

// TestTUITaskPanicEndsTheUI: a panic in the goroutine that runs a task
// would end the process with the terminal in raw mode; it is recovered,
// ends the UI (which restores the terminal) and is reported after, with
// its value and stack.
func TestTUITaskPanicEndsTheUI(t *testing.T) {
	msgs := make(chan tea.Msg, 4)
	tasks := &tuiTasks{ctx: context.Background(), send: func(m tea.Msg) { msgs <- m }}
	tasks.start = func(context.Context, string, pablo.Approver) (*pablo.Task, error) { panic("broken host") }
	tasks.Submit("go")
	tasks.wait()
	failed, ok := (<-msgs).(tuiFailedMsg)
	if !ok || !strings.Contains(failed.err.Error(), "broken host") || !strings.Contains(failed.err.Error(), "goroutine") {
		t.Fatalf("the panic was reported as %#v", failed)
	}
	m, _, _ := newTestModel(t)
	_, cmd := m.Update(failed)
	if cmd == nil {
		t.Fatal("a failed host goroutine does not end the UI")
	}
	if _, quit := cmd().(tea.QuitMsg); !quit || m.err == nil {
		t.Fatalf("a failed host goroutine does not end the UI with its error (%v)", m.err)
	}
}
