package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/approval"
	"github.com/pabloagent/pablo/deployment"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/termtext"
)

// tuiCommand implements `pablo tui [TASK]`, and bare `pablo` on a capable
// terminal: an interactive terminal UI over the deployment's runtime. Each
// submission starts a new task with fresh context (as the reference), or,
// with --session, the next prompt of one session whose earlier prompts and
// answers it carries.
//
// The terminal is the UI's alone while it runs: Bubble Tea puts it in raw
// mode on the alternate screen and restores it on every path it handles
// (exit, Ctrl-C when idle, SIGTERM and SIGINT, a cancelled context, a
// panic in the model or in the goroutine that runs a task).
func tuiCommand(ctx context.Context, args []string, h *host) error {
	p, err := parseArgs(args, "tui")
	if err != nil {
		return err
	}
	if len(p.args) > 1 {
		return usagef("usage: pablo tui [\"TASK\"] --config F --bind workspace=DIR (quote a task of several words)")
	}
	in, out, err := tuiTerminal(h)
	if err != nil {
		return err
	}
	overrides, err := runOverrides(p)
	if err != nil {
		return err
	}
	// As `pablo run`: --config with its overrides, or no-config mode.
	d, cleanup, err := loadRun(ctx, p, h, overrides)
	defer cleanup()
	if err != nil {
		return preAdmission(h, nil, "", err)
	}
	if d.Options().Interfaces.CLIOutput == "json" {
		return usagef("pablo tui needs text output, and options.interfaces.cli_output is \"json\" (use pablo run for a task object)")
	}
	hopts := pablo.HostOptions{LookupEnv: h.lookupEnv, FixtureEndpoint: p.one("fixture-endpoint"), Clock: h.clock, NewID: h.newID,
		EgressForwarder: h.forwarder}
	// OAuth grants kept from earlier runs are used; a server that needs a
	// new consent fails with its reason, since the loopback authorizer
	// would print its URL under the UI.
	if s, err := h.tokenStore(); err == nil {
		hopts.MCPTokens = s
	}
	if path := p.one("script"); path != "" {
		if d.Locked() {
			return &exitError{code: 2, err: &deployment.Error{Code: deployment.CodeInvalidValue, Option: "--script", Message: "a script never replaces a locked deployment's model"}}
		}
		s, err := pablo.LoadScript(ctx, path)
		if err != nil {
			return usagef("--script: %v", err)
		}
		hopts.Model = pablo.NewScriptModel(s)
	}
	var store ledger.Store
	if value := storeValue(h, p); value != "" {
		s, err := openStore(ctx, h, d, value, false)
		if err != nil {
			return &exitError{code: 2, err: fmt.Errorf("--store: %w", err)}
		}
		defer s.Close()
		store, hopts.Store = s, s
	}
	obs, _, err := openObservability(ctx, h, p, d)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	defer obs.Close(ctx)
	hopts.Sink = obs.sink(nil)
	hopts.Tracer = obs.otel.Tracer()
	rt, err := d.NewRuntime(ctx, hopts)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	defer rt.Close()
	if err := knownCapabilities(ctx, d, h, "--approve", p.values["approve"]); err != nil {
		return err
	}
	tasks := &tuiTasks{ctx: ctx}
	tasks.start = func(ctx context.Context, input string, a pablo.Approver) (*pablo.Task, error) {
		return rt.StartTask(ctx, pablo.TaskRequest{Input: input, Approver: a, Roles: p.values["role"], Kind: p.one("kind")})
	}
	var turns []pablo.SessionTurn
	if id := p.one("session"); id != "" {
		session, earlier, err := tuiSession(ctx, h, d, rt, store, id, p.one("kind"))
		if err != nil {
			return &exitError{code: 2, err: err}
		}
		defer session.Close()
		turns = earlier
		tasks.start = func(ctx context.Context, input string, a pablo.Approver) (*pablo.Task, error) {
			return session.Prompt(ctx, input, a)
		}
	}
	first := ""
	if len(p.args) == 1 {
		first = p.args[0]
	}
	now := time.Now
	if h.clock != nil {
		now = h.clock.Now
	}
	model := newTUIModel(tasks, now, first)
	for _, turn := range turns {
		model.replay(turn)
	}
	// SIGINT and SIGTERM are the command's context's (main): Bubble Tea's
	// own handler would quit as if the user had, racing the context.
	prog := tea.NewProgram(model, tea.WithContext(ctx), tea.WithInput(in), tea.WithOutput(out),
		tea.WithAltScreen(), tea.WithMouseCellMotion(), tea.WithoutSignalHandler())
	tasks.send = prog.Send
	approver, closeApprover, err := runApprover(p, &host{})
	if err != nil {
		return err
	}
	defer closeApprover()
	if approver == nil {
		approver = tuiApprover{send: prog.Send}
	}
	tasks.approver = approver
	_, runErr := prog.Run()
	// The terminal is restored. A task still running (the UI ended on a
	// signal or a failure) is cancelled and joined, its owned cleanup
	// done, before the runtime closes.
	tasks.Cancel()
	tasks.wait()
	switch {
	case model.err != nil:
		return model.err
	case ctx.Err() != nil:
		// Interrupted (SIGINT, SIGTERM): exit 130.
		return context.Canceled
	case runErr != nil:
		return fmt.Errorf("the terminal UI failed: %w", runErr)
	}
	return nil
}

// tuiCapable reports whether h's terminal can run the UI: stdin and stdout
// terminals and a TERM that is set and not dumb.
func tuiCapable(h *host) bool {
	_, _, err := tuiTerminal(h)
	return err == nil
}

// tuiTerminal returns the terminal the UI reads and draws on, or the
// reason it cannot run.
func tuiTerminal(h *host) (in, out *os.File, err error) {
	in, ok := h.stdin.(*os.File)
	if !ok || !isTerminal(in) {
		return nil, nil, usagef("pablo tui needs a terminal, and stdin is not one (pablo run \"TASK\" runs one task without it)")
	}
	out, ok = rawOutput(h.stdout).(*os.File)
	if !ok || !isTerminalOutput(out) {
		return nil, nil, usagef("pablo tui needs a terminal, and stdout is not one (pablo run \"TASK\" runs one task without it)")
	}
	if t, _ := h.lookupEnv("TERM"); t == "" || t == "dumb" {
		return nil, nil, usagef("pablo tui needs a terminal that can draw it, and TERM is %q (set TERM, such as xterm-256color)", t)
	}
	return in, out, nil
}

// tuiSession opens the session whose prompts the submissions are, with
// the deployment's workspace as its working directory: a new one for
// "new", or the session id the store holds, with its earlier turns. The
// store, when given, records each task's link to the session.
func tuiSession(ctx context.Context, h *host, d *pablo.Deployment, rt *pablo.Runtime, store ledger.Store, id, kind string) (*pablo.Session, []pablo.SessionTurn, error) {
	if id != "new" && store == nil {
		return nil, nil, usagef("--session %s continues a session of a ledger: give its --store (or --session new for a new one)", termtext.Printable(id))
	}
	ws, err := d.Workspace()
	if err != nil {
		return nil, nil, err
	}
	if real, err := filepath.EvalSymlinks(ws); err == nil {
		ws = real
	}
	opts := pablo.SessionOptions{
		Runtime:   func(context.Context) (*pablo.Runtime, error) { return rt, nil },
		Workspace: ws,
		Store:     store,
		Clock:     h.clock,
		NewID:     h.newID,
	}
	sessions, err := pablo.NewSessions(opts)
	if err != nil {
		return nil, nil, err
	}
	if id == "new" {
		s, err := sessions.New(ctx, pablo.SessionRequest{Cwd: ws, Kind: kind})
		return s, nil, err
	}
	return sessions.Load(ctx, id, pablo.SessionRequest{Cwd: ws, Kind: kind})
}

// tuiTasks runs the UI's tasks, one at a time, and sends what each does
// to the program.
type tuiTasks struct {
	ctx      context.Context
	start    func(ctx context.Context, input string, a pablo.Approver) (*pablo.Task, error)
	approver pablo.Approver
	send     func(tea.Msg)

	mu     sync.Mutex
	cancel context.CancelFunc
	task   *pablo.Task
	wg     sync.WaitGroup
}

// Submit implements tuiBackend.
func (b *tuiTasks) Submit(input string) {
	ctx, cancel := context.WithCancel(b.ctx)
	b.mu.Lock()
	b.cancel = cancel
	b.mu.Unlock()
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		defer cancel()
		// A panic here would end the process with the terminal in raw
		// mode: it ends the UI instead, which restores the terminal, and
		// is reported after.
		defer func() {
			if r := recover(); r != nil {
				b.send(tuiFailedMsg{err: fmt.Errorf("panic while running a task: %v\n%s", r, debug.Stack())})
			}
		}()
		task, err := b.start(ctx, input, b.approver)
		if err != nil {
			b.send(tuiDoneMsg{err: err})
			return
		}
		b.mu.Lock()
		b.task = task
		if ctx.Err() != nil {
			task.Cancel()
		}
		b.mu.Unlock()
		for ev, err := range task.Events() {
			if err != nil {
				break
			}
			b.send(tuiEventMsg{ev: ev})
		}
		obj := task.Wait()
		b.mu.Lock()
		b.task = nil
		b.mu.Unlock()
		b.send(tuiDoneMsg{obj: obj})
	}()
}

// Cancel implements tuiBackend.
func (b *tuiTasks) Cancel() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cancel != nil {
		b.cancel()
	}
	if b.task != nil {
		b.task.Cancel()
	}
}

// wait joins the task goroutines.
func (b *tuiTasks) wait() { b.wg.Wait() }

// tuiApprover asks the UI: the question is drawn in place of the input
// until one of its answers is typed, or the task no longer waits.
type tuiApprover struct{ send func(tea.Msg) }

// Approve implements approval.Approver.
func (a tuiApprover) Approve(ctx context.Context, req approval.Request) (approval.Answer, error) {
	reply := make(chan approval.Answer, 1)
	a.send(tuiApprovalMsg{req: req, reply: reply})
	select {
	case answer := <-reply:
		return answer, nil
	case <-ctx.Done():
		a.send(tuiApprovalGoneMsg{id: req.ID})
		return approval.Reject, ctx.Err()
	}
}

// ApprovalChannel implements approval.Channel: the user answered on
// the terminal.
func (tuiApprover) ApprovalChannel() string { return "tty" }
