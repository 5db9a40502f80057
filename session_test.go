package pablo_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/model"
)

// echoModel answers every request with the text of its last message and
// keeps the requests it saw. A block channel, when set, holds each answer
// until the test lets it go or the task is cancelled.
type echoModel struct {
	mu    sync.Mutex
	seen  [][]model.Message
	block chan struct{}
}

func (m *echoModel) Info() model.Info { return model.Info{Provider: "test", Model: "echo"} }

func (m *echoModel) Generate(ctx context.Context, req *model.Request, emit func(string) error) (*model.Response, error) {
	m.mu.Lock()
	m.seen = append(m.seen, append([]model.Message(nil), req.Messages...))
	block := m.block
	m.mu.Unlock()
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return nil, &model.Error{Code: "provider_transport", Delivery: "may_have_been_sent"}
		}
	}
	text := "re: " + req.Messages[len(req.Messages)-1].Content
	if err := emit(text); err != nil {
		return nil, err
	}
	return &model.Response{Text: text, FinishReason: model.FinishStop}, nil
}

func (m *echoModel) requests() [][]model.Message {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.seen
}

func sessionHandler(t *testing.T, m model.Model, store ledger.Store, mod func(*pablo.SessionOptions)) (*pablo.Sessions, string) {
	t.Helper()
	set, err := authority.New(authority.Config{})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := pablo.NewRuntime(pablo.RuntimeOptions{Model: m, Authority: set, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	opts := pablo.SessionOptions{Runtime: func(context.Context) (*pablo.Runtime, error) { return rt, nil }, Workspace: ws, Store: store,
		MCPServers: []pablo.SessionMCPServer{{Name: "files", Command: "/usr/bin/files", Args: []string{"--root", "."}}, {Name: "web", URL: "https://mcp.example.test/mcp"}}}
	if mod != nil {
		mod(&opts)
	}
	s, err := pablo.NewSessions(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s, ws
}

func wantSessionError(t *testing.T, err error, code string) {
	t.Helper()
	if !errors.Is(err, &pablo.SessionError{Code: code}) {
		t.Fatalf("error %v, want a SessionError %q", err, code)
	}
}

// TestSessionRefusesWhatIsNotItsWorkspace: a session's working directory is
// absolute, existing, a directory and, canonicalized, the bound
// workspace; its MCP servers are an exact subset of the host's.
func TestSessionRefusesWhatIsNotItsWorkspace(t *testing.T) {
	s, ws := sessionHandler(t, &echoModel{}, nil, nil)
	file := filepath.Join(ws, "f")
	os.WriteFile(file, nil, 0o600)
	link := filepath.Join(t.TempDir(), "ws")
	if err := os.Symlink(ws, link); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, c := range []struct {
		name string
		req  pablo.SessionRequest
	}{
		{"Relative", pablo.SessionRequest{Cwd: "work"}},
		{"Empty", pablo.SessionRequest{}},
		{"Missing", pablo.SessionRequest{Cwd: filepath.Join(ws, "missing")}},
		{"File", pablo.SessionRequest{Cwd: file}},
		{"OtherDirectory", pablo.SessionRequest{Cwd: t.TempDir()}},
		{"Parent", pablo.SessionRequest{Cwd: filepath.Dir(ws)}},
		{"UnknownServer", pablo.SessionRequest{Cwd: ws, MCPServers: []pablo.SessionMCPServer{{Name: "shell", Command: "/bin/sh"}}}},
		{"OtherArgs", pablo.SessionRequest{Cwd: ws, MCPServers: []pablo.SessionMCPServer{{Name: "files", Command: "/usr/bin/files", Args: []string{"--root", "/"}}}}},
		{"OtherCommand", pablo.SessionRequest{Cwd: ws, MCPServers: []pablo.SessionMCPServer{{Name: "files", Command: "/tmp/files", Args: []string{"--root", "."}}}}},
		{"OtherURL", pablo.SessionRequest{Cwd: ws, MCPServers: []pablo.SessionMCPServer{{Name: "web", URL: "https://evil.example.test/mcp"}}}},
		{"Twice", pablo.SessionRequest{Cwd: ws, MCPServers: []pablo.SessionMCPServer{{Name: "web", URL: "https://mcp.example.test/mcp"}, {Name: "web", URL: "https://mcp.example.test/mcp"}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := s.New(ctx, c.req)
			wantSessionError(t, err, pablo.SessionInvalid)
		})
	}
	for _, req := range []pablo.SessionRequest{
		{Cwd: ws}, {Cwd: link}, {Cwd: ws + "/."},
		{Cwd: ws, MCPServers: []pablo.SessionMCPServer{{Name: "web", URL: "https://mcp.example.test/mcp"}}},
	} {
		if _, err := s.New(ctx, req); err != nil {
			t.Errorf("%+v: %v", req, err)
		}
	}
}

// TestSessionIsAConversation: each prompt is its own root task, linked to
// the session in its events and the ledger, and carries the earlier turns
// as the messages they were: each prompt a user message, each answer an
// assistant message.
func TestSessionIsAConversation(t *testing.T) {
	m := &echoModel{}
	store := ledger.NewMemoryStore()
	s, ws := sessionHandler(t, m, store, nil)
	x, err := s.New(context.Background(), pablo.SessionRequest{Cwd: ws})
	if err != nil {
		t.Fatal(err)
	}
	var runIDs []string
	for _, p := range []string{"first question", "second question", "third question"} {
		task, err := x.Prompt(context.Background(), p, nil)
		if err != nil {
			t.Fatal(err)
		}
		for ev := range task.Events() {
			if ev.SessionID != x.ID() {
				t.Fatalf("event %s has session %q, want %q", ev.Type, ev.SessionID, x.ID())
			}
		}
		obj := task.Wait()
		if *obj.SessionID != x.ID() || *obj.RunID == x.ID() || obj.Outcome.Status != event.StatusCompleted {
			t.Fatalf("task object %+v", obj)
		}
		runIDs = append(runIDs, *obj.RunID)
	}
	reqs := m.requests()
	last := reqs[2]
	want := []model.Message{
		{Role: model.RoleUser, Content: "first question"}, {Role: model.RoleAssistant, Content: "re: first question"},
		{Role: model.RoleUser, Content: "second question"}, {Role: model.RoleAssistant, Content: "re: second question"},
		{Role: model.RoleUser, Content: "third question"},
	}
	if len(last) != len(want) {
		t.Fatalf("the third prompt's request holds %+v, want the two earlier turns as they were and the prompt", last)
	}
	for i := range want {
		if last[i].Role != want[i].Role || last[i].Content != want[i].Content {
			t.Errorf("message %d is %s %q, want %s %q", i, last[i].Role, last[i].Content, want[i].Role, want[i].Content)
		}
	}
	var infos []pablo.SessionInfo
	for info, err := range s.List(context.Background(), ws) {
		if err != nil {
			t.Fatal(err)
		}
		infos = append(infos, info)
	}
	if len(infos) != 1 || infos[0].ID != x.ID() || infos[0].Title != "first question" || strings.Join(infos[0].Tasks, ",") != strings.Join(runIDs, ",") {
		t.Fatalf("list %+v, want one session of tasks %v", infos, runIDs)
	}
	for range s.List(context.Background(), t.TempDir()) {
		t.Error("another workspace lists the session")
	}
}

// TestSessionHistoryIsBounded: the history keeps the latest turns that fit
// MaxHistoryBytes, and a turn that does not fit is left out whole.
func TestSessionHistoryIsBounded(t *testing.T) {
	m := &echoModel{}
	s, ws := sessionHandler(t, m, nil, func(o *pablo.SessionOptions) { o.MaxHistoryBytes = 400 })
	x, _ := s.New(context.Background(), pablo.SessionRequest{Cwd: ws})
	for i := range 6 {
		task, err := x.Prompt(context.Background(), "question "+strconv.Itoa(i)+" "+strings.Repeat("x", 40), nil)
		if err != nil {
			t.Fatal(err)
		}
		task.Wait()
	}
	last := m.requests()[5]
	total := 0
	for _, msg := range last[:len(last)-1] {
		total += len(msg.Content)
	}
	if total > 400 || len(last) < 2 || !strings.Contains(last[len(last)-2].Content, "question 4") {
		t.Fatalf("history of %d bytes in %d messages", total, len(last)-1)
	}
}

// TestSessionRunsOnePromptAtATime: a second prompt while one runs is
// refused SessionBusy; MaxSessions bounds the sessions running at once
// and MaxPrompts the prompts of one session; Cancel ends the running
// prompt and frees its slot.
func TestSessionRunsOnePromptAtATime(t *testing.T) {
	m := &echoModel{block: make(chan struct{})}
	s, ws := sessionHandler(t, m, nil, func(o *pablo.SessionOptions) { o.MaxSessions = 2; o.MaxPrompts = 2 })
	ctx := context.Background()
	a, _ := s.New(ctx, pablo.SessionRequest{Cwd: ws})
	b, _ := s.New(ctx, pablo.SessionRequest{Cwd: ws})
	c, _ := s.New(ctx, pablo.SessionRequest{Cwd: ws})
	ta, err := a.Prompt(ctx, "one", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.Prompt(ctx, "two", nil)
	wantSessionError(t, err, pablo.SessionBusy)
	tb, err := b.Prompt(ctx, "one", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Prompt(ctx, "one", nil)
	wantSessionError(t, err, pablo.SessionLimit)
	a.Cancel()
	if obj := ta.Wait(); obj.Outcome.Status != event.StatusCancelled {
		t.Fatalf("cancelled prompt: %+v", obj.Outcome)
	}
	tc, err := c.Prompt(ctx, "one", nil)
	if err != nil {
		t.Fatalf("a cancelled prompt keeps its slot: %v", err)
	}
	close(m.block)
	tb.Wait()
	tc.Wait()
	if _, err := b.Prompt(ctx, "two", nil); err != nil {
		t.Fatal(err)
	}
	b.Close()
	_, err = b.Prompt(ctx, "three", nil)
	wantSessionError(t, err, pablo.SessionUnknown)
	_, err = s.Get(b.ID())
	wantSessionError(t, err, pablo.SessionUnknown)
	a2, _ := s.Get(a.ID())
	t2, err := a2.Prompt(ctx, "two", nil)
	if err != nil {
		t.Fatal(err)
	}
	t2.Wait()
	_, err = a2.Prompt(ctx, "three", nil)
	wantSessionError(t, err, pablo.SessionLimit)
}

// TestSessionLoadsFromTheStore: a session whose tasks settled in one
// handler is listed and loaded by another over the same store, with its
// turns' events to replay, and the conversation goes on.
func TestSessionLoadsFromTheStore(t *testing.T) {
	store := ledger.NewMemoryStore()
	s1, ws := sessionHandler(t, &echoModel{}, store, nil)
	x, _ := s1.New(context.Background(), pablo.SessionRequest{Cwd: ws})
	task, _ := x.Prompt(context.Background(), "remember 42", nil)
	task.Wait()

	m := &echoModel{}
	s2, _ := sessionHandler(t, m, store, func(o *pablo.SessionOptions) { o.Workspace = ws })
	_, _, err := s2.Load(context.Background(), "no-such-session", pablo.SessionRequest{Cwd: ws})
	wantSessionError(t, err, pablo.SessionUnknown)
	_, _, err = s2.Load(context.Background(), x.ID(), pablo.SessionRequest{Cwd: t.TempDir()})
	wantSessionError(t, err, pablo.SessionInvalid)
	y, turns, err := s2.Load(context.Background(), x.ID(), pablo.SessionRequest{Cwd: ws})
	if err != nil {
		t.Fatal(err)
	}
	if len(turns) != 1 || turns[0].Prompt != "remember 42" || turns[0].Outcome == nil || *turns[0].Outcome.Output != "re: remember 42" {
		t.Fatalf("turns %+v", turns)
	}
	var types []string
	for _, ev := range turns[0].Events {
		types = append(types, string(ev.Type))
		if ev.SessionID != x.ID() || ev.RunID != task.ID() {
			t.Errorf("replayed %s: session %q run %q", ev.Type, ev.SessionID, ev.RunID)
		}
	}
	if strings.Join(types, " ") != "run.started model.started assistant.text.delta model.finished run.finished" {
		t.Errorf("replayed %v", types)
	}
	_, _, err = s2.Load(context.Background(), x.ID(), pablo.SessionRequest{Cwd: ws})
	wantSessionError(t, err, pablo.SessionInvalid)
	next, err := y.Prompt(context.Background(), "what was it?", nil)
	if err != nil {
		t.Fatal(err)
	}
	next.Wait()
	if got := m.requests()[0]; len(got) != 3 || got[0].Content != "remember 42" || got[1].Role != model.RoleAssistant || got[1].Content != "re: remember 42" {
		t.Fatalf("the loaded conversation goes on: %+v", got)
	}
	_, _, err = func() (*pablo.Session, []pablo.SessionTurn, error) {
		s3, _ := sessionHandler(t, &echoModel{}, nil, func(o *pablo.SessionOptions) { o.Workspace = ws })
		return s3.Load(context.Background(), x.ID(), pablo.SessionRequest{Cwd: ws})
	}()
	wantSessionError(t, err, pablo.SessionNoStore)
}

// stopAtDispatch stands for a host killed right after a model call of
// the task it runs left: the dispatch is durable, nothing after it is.
type stopAtDispatch struct {
	ledger.Store
	mu      sync.Mutex
	stopped bool
}

func (s *stopAtDispatch) Append(ctx context.Context, recs []ledger.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return errors.New("the host stopped")
	}
	err := s.Store.Append(ctx, recs)
	for _, r := range recs {
		if r.Kind == ledger.RecordCall && r.Call.Kind == ledger.ModelCallKind && r.Call.State == ledger.CallDispatched {
			s.stopped = true
		}
	}
	return err
}

// A session's prompt whose host stopped is resumed from the store with the
// session's earlier turns as its conversation, and the session goes on
// from the resumed turn.
func TestSessionResumesAPromptItsHostStopped(t *testing.T) {
	store := ledger.NewMemoryStore()
	s1, ws := sessionHandler(t, &echoModel{}, store, nil)
	x, _ := s1.New(context.Background(), pablo.SessionRequest{Cwd: ws})
	first, _ := x.Prompt(context.Background(), "remember 42", nil)
	first.Wait()
	stopping := &stopAtDispatch{Store: store}
	s2, _ := sessionHandler(t, &echoModel{}, stopping, func(o *pablo.SessionOptions) { o.Workspace = ws })
	y, _, err := s2.Load(context.Background(), x.ID(), pablo.SessionRequest{Cwd: ws})
	if err != nil {
		t.Fatal(err)
	}
	cut, _ := y.Prompt(context.Background(), "what was it?", nil)
	cut.Wait()

	m := &echoModel{}
	s3, _ := sessionHandler(t, m, store, func(o *pablo.SessionOptions) { o.Workspace = ws })
	z, turns, err := s3.Load(context.Background(), x.ID(), pablo.SessionRequest{Cwd: ws})
	if err != nil {
		t.Fatal(err)
	}
	if len(turns) != 2 || turns[1].Outcome != nil || turns[1].TaskID != cut.ID() {
		t.Fatalf("turns %+v", turns)
	}
	resumed, err := z.Resume(context.Background(), cut.ID(), nil)
	if err != nil {
		t.Fatal(err)
	}
	obj := resumed.Wait()
	if obj.Outcome.Status != event.StatusCompleted || *obj.Outcome.Output != "re: what was it?" || obj.Resume == nil {
		t.Fatalf("resumed %+v", obj.Outcome)
	}
	got := m.requests()[0]
	if len(got) != 3 || got[0].Content != "remember 42" || got[1].Content != "re: remember 42" || got[2].Content != "what was it?" {
		t.Fatalf("the resumed prompt's conversation: %+v", got)
	}
	next, _ := z.Prompt(context.Background(), "and then?", nil)
	next.Wait()
	if got := m.requests()[1]; len(got) != 5 || got[3].Content != "re: what was it?" {
		t.Fatalf("the session goes on from the resumed turn: %+v", got)
	}
}

// TestSessionRolesNarrowTheHosts: a session holds the roles the host gives
// (SessionOptions.Roles) unless it asks for fewer; asking for another is
// refused; each prompt's task holds the session's roles.
func TestSessionRolesNarrowTheHosts(t *testing.T) {
	var mu sync.Mutex
	var seen [][]string
	set, err := authority.New(authority.Config{})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := pablo.NewRuntime(pablo.RuntimeOptions{Model: &echoModel{}, Authority: set,
		OnStart: func(ti pablo.TaskInfo) { mu.Lock(); seen = append(seen, ti.Roles); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	s, err := pablo.NewSessions(pablo.SessionOptions{Runtime: func(context.Context) (*pablo.Runtime, error) { return rt, nil }, Workspace: ws,
		Roles: []string{"oncall", "support-lead"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, err = s.New(ctx, pablo.SessionRequest{Cwd: ws, Roles: []string{"admin"}})
	wantSessionError(t, err, pablo.SessionInvalid)
	for _, asked := range [][]string{nil, {"oncall"}} {
		x, err := s.New(ctx, pablo.SessionRequest{Cwd: ws, Roles: asked})
		if err != nil {
			t.Fatal(err)
		}
		task, err := x.Prompt(ctx, "hi", nil)
		if err != nil {
			t.Fatal(err)
		}
		task.Wait()
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 || strings.Join(seen[0], ",") != "oncall,support-lead" || strings.Join(seen[1], ",") != "oncall" {
		t.Errorf("the prompts' tasks held %v, want [oncall support-lead] then [oncall]", seen)
	}
}

// TestSessionKindNarrowsTheHosts: a session is of the kind the host gives
// (SessionOptions.Kind) unless it names one; naming the host's kind is
// that kind, naming another is refused, and so is an invalid one. A host
// that gives none leaves each session its own kind, or none.
func TestSessionKindNarrowsTheHosts(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	set, err := authority.New(authority.Config{})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := pablo.NewRuntime(pablo.RuntimeOptions{Model: &echoModel{}, Authority: set,
		OnStart: func(ti pablo.TaskInfo) { mu.Lock(); seen = append(seen, ti.Kind); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	open := func(host string) *pablo.Sessions {
		s, err := pablo.NewSessions(pablo.SessionOptions{Runtime: func(context.Context) (*pablo.Runtime, error) { return rt, nil }, Workspace: ws, Kind: host})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	ctx := context.Background()
	prompt := func(s *pablo.Sessions, asked string) error {
		x, err := s.New(ctx, pablo.SessionRequest{Cwd: ws, Kind: asked})
		if err != nil {
			return err
		}
		task, err := x.Prompt(ctx, "hi", nil)
		if err != nil {
			t.Fatal(err)
		}
		task.Wait()
		return nil
	}
	review, free := open("review"), open("")
	for _, c := range []struct {
		s     *pablo.Sessions
		asked string
	}{{review, ""}, {review, "review"}, {free, ""}, {free, "triage"}} {
		if err := prompt(c.s, c.asked); err != nil {
			t.Fatalf("asked %q: %v", c.asked, err)
		}
	}
	wantSessionError(t, prompt(review, "triage"), pablo.SessionInvalid)
	wantSessionError(t, prompt(free, "Two Words"), pablo.SessionInvalid)
	if _, err := pablo.NewSessions(pablo.SessionOptions{Runtime: func(context.Context) (*pablo.Runtime, error) { return rt, nil }, Kind: "Two Words"}); err == nil {
		t.Error("an invalid SessionOptions.Kind is accepted")
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(seen, ",") != "review,review,,triage" {
		t.Errorf("the prompts' tasks were of kinds %q, want review, review, none, triage", seen)
	}
}
