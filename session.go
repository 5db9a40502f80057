package pablo

import (
	"context"
	"errors"
	"fmt"
	"github.com/pabloagent/pablo/authority"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/internal/clock"
	"github.com/pabloagent/pablo/internal/engine"
	"github.com/pabloagent/pablo/internal/ids"
	"github.com/pabloagent/pablo/internal/textx"
	"github.com/pabloagent/pablo/model"

	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/skills"
)

// SessionOptions configure a [Sessions] handler.
type SessionOptions struct {
	// Runtime returns the runtime the next prompt runs on. It is called
	// at every prompt, so a host that re-reads its deployment can rebuild
	// what changed and return the same runtime otherwise. Required.
	Runtime func(ctx context.Context) (*Runtime, error)
	// Workspace is the canonical absolute workspace the deployment binds:
	// every session's working directory must be it. Empty accepts any
	// existing absolute directory (a deployment that binds none).
	Workspace string
	// MCPServers are the host-approved MCP server definitions a session
	// may select from.
	MCPServers []SessionMCPServer
	// ClientMCPServers admits MCP servers a client defines itself (an
	// editor's, with its own environment): a server in a session request
	// that is not one of MCPServers is then the session's own, run by
	// SessionRuntime under the deployment's policy and sandbox. False
	// refuses it, naming options.interfaces.acp.client_mcp_servers.
	ClientMCPServers bool
	// WorkspaceRoots are the canonical directories a session's working
	// directory may be in (each root included), beside Workspace itself.
	// A session in another directory than Workspace runs on the runtime
	// SessionRuntime returns for it.
	WorkspaceRoots []string
	// SessionRuntime returns the runtime the next prompt of a session
	// runs on when the session is not the deployment's own: another
	// workspace, or MCP servers of its client. Like Runtime it is called
	// at every prompt. Nil refuses such sessions.
	SessionRuntime func(ctx context.Context, spec SessionSpec) (*Runtime, error)
	// Roles are the roles the host gives sessions (TaskRequest.Roles of
	// each prompt): a session that names none holds them all, and one
	// that names some (SessionRequest.Roles) holds those, each of which
	// must be one of these. Nil: sessions hold no role.
	Roles []string
	// Kind is the task kind the host gives sessions (TaskRequest.Kind of
	// each prompt, pablo acp --kind): a session that names none is of
	// this kind, and one that names a kind (SessionRequest.Kind) must name
	// this one, since another kind's Skills are not a subset of its. Empty
	// leaves each session its own kind, or none (every Skill).
	Kind string
	// MaxSessions bounds the sessions whose prompts run at once (0: 4).
	// A prompt past it is refused, never queued.
	MaxSessions int
	// MaxPrompts bounds the prompts of one session (0: 1,024).
	MaxPrompts int
	// MaxHistoryBytes bounds the earlier prompts and answers a prompt
	// carries (0: 256 KiB); the oldest turns go first.
	MaxHistoryBytes int
	// Store, when set, is where sessions are listed and loaded from: the
	// store the runtime's tasks record in.
	Store ledger.Store
	// Clock and NewID are the clock and the session ID source; nil means
	// the system clock and random UUIDs.
	Clock ledger.Clock
	NewID func() string
}

// The session handler's defaults (SessionOptions documents them).
const (
	defaultMaxSessions     = 4
	defaultMaxPrompts      = 1024
	defaultMaxHistoryBytes = 256 << 10
)

// SessionMCPServer is an MCP server definition as a session names it: by
// name, with the command and arguments of a stdio server or the URL of an
// HTTP one. A client's definition selects a host-approved server only when
// every field is equal and it sets no Env or Headers; any other is the
// client's own server (SessionOptions.ClientMCPServers).
type SessionMCPServer struct {
	Name    string
	Command string
	Args    []string
	URL     string
	// Env are a client's stdio server's environment values and Headers
	// its HTTP server's header values: the user's own, treated as secrets
	// (masked in every event, record and error). A host-approved server
	// takes its environment from the host, so a selection sets neither.
	Env     map[string]string
	Headers map[string]string
}

// SessionSpec is what a session needs of its runtime beyond the
// deployment's own: its workspace and its client's MCP servers.
type SessionSpec struct {
	// Workspace is the session's canonical working directory.
	Workspace string
	// ClientMCPServers are the servers its client defined, to be run as
	// the deployment's own under its policy and sandbox.
	ClientMCPServers []SessionMCPServer
}

// own reports whether spec is the deployment's own session: its bound
// workspace and no server of the client's.
func (spec SessionSpec) own(workspace string) bool {
	return len(spec.ClientMCPServers) == 0 && (workspace == "" || spec.Workspace == workspace)
}

// SessionRequest opens a session.
type SessionRequest struct {
	// Cwd is the client's working directory: absolute and existing; it
	// is canonicalized and must equal SessionOptions.Workspace when set.
	Cwd string
	// MCPServers, when not empty, selects host-approved servers; each must
	// equal one of SessionOptions.MCPServers exactly.
	MCPServers []SessionMCPServer
	// Roles, when not nil, are the roles the session's prompts hold: a
	// subset of SessionOptions.Roles (a client never gains a role the
	// host did not give). Nil holds every role of SessionOptions.Roles.
	Roles []string
	// Kind is the task kind of the session's prompts (TaskRequest.Kind):
	// only the Skills for it are activated and readable. A session only
	// narrows: with SessionOptions.Kind set it must be empty (the host's
	// kind) or equal it. Empty is the host's kind, or none (every Skill).
	Kind string
}

// SessionTurn is one earlier prompt of a loaded session: its task, its
// events as the ledger recorded them (to replay), and how it ended. A task
// cut off by a crash has no Outcome; its Unknown calls may have taken
// effect and are reported, never replayed.
type SessionTurn struct {
	TaskID  string
	Prompt  string
	Events  []event.Event
	Outcome *event.Outcome
	Unknown []ledger.CallReport
}

// SessionInfo describes a session the store knows.
type SessionInfo struct {
	ID        string
	Workspace string
	// Title is the session's first prompt, cut short.
	Title     string
	UpdatedAt time.Time
	// Tasks are the session's tasks, oldest first.
	Tasks []string
}

// SessionError is a refusal of the session handler: a malformed request,
// an unknown session, one that is busy or a limit reached. Code is one of
// the SessionErr constants.
type SessionError struct {
	Code    string
	Message string
}

func (e *SessionError) Error() string { return "pablo: session: " + e.Message }

// Is reports whether target is a *SessionError with the same Code, so
// errors.Is(err, &SessionError{Code: SessionBusy}) tests the kind.
func (e *SessionError) Is(target error) bool {
	var t *SessionError
	return errors.As(target, &t) && t.Code == e.Code
}

// The codes of a SessionError.
const (
	SessionInvalid = "invalid"  // a malformed request: cwd, servers, prompt
	SessionUnknown = "unknown"  // no such session, or it is closed
	SessionBusy    = "busy"     // a prompt of the session is running
	SessionLimit   = "limit"    // MaxSessions or MaxPrompts reached
	SessionNoStore = "no_store" // listing or loading needs a store
)

// Sessions is the session handler: it opens sessions, and each runs its
// prompts one at a time as root tasks of the runtime, carrying the
// conversation so far. ACP serves it over stdio; the supervisor of
// children drives it in-process. It is safe for concurrent use.
type Sessions struct {
	opts      SessionOptions
	workspace string // opts.Workspace, canonical

	mu      sync.Mutex
	open    map[string]*Session
	running int // sessions whose prompt runs now
}

// NewSessions returns a session handler.
func NewSessions(opts SessionOptions) (*Sessions, error) {
	if opts.Runtime == nil {
		return nil, errors.New("pablo: SessionOptions.Runtime is required")
	}
	if err := authority.ValidateRoles(opts.Roles); err != nil {
		return nil, fmt.Errorf("pablo: SessionOptions.Roles: %w", err)
	}
	opts.Roles = slices.Clone(opts.Roles)
	if err := skills.ValidateTaskKind(opts.Kind); err != nil {
		return nil, fmt.Errorf("pablo: SessionOptions.Kind: %w", err)
	}
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = defaultMaxSessions
	}
	if opts.MaxPrompts <= 0 {
		opts.MaxPrompts = defaultMaxPrompts
	}
	if opts.MaxHistoryBytes <= 0 {
		opts.MaxHistoryBytes = defaultMaxHistoryBytes
	}
	if opts.Clock == nil {
		opts.Clock = clock.System{}
	}
	if opts.NewID == nil {
		opts.NewID = ids.Random{}.NewID
	}
	s := &Sessions{opts: opts, open: map[string]*Session{}}
	if opts.Workspace != "" {
		ws, err := canonicalDir(opts.Workspace)
		if err != nil {
			return nil, fmt.Errorf("pablo: SessionOptions.Workspace: %w", err)
		}
		s.workspace = ws
	}
	return s, nil
}

// Session is one conversation: its prompts run one at a time, each a root
// task whose history is the session's earlier prompts and answers.
type Session struct {
	s         *Sessions
	id        string
	workspace string
	servers   []string // nil: every configured server
	spec      SessionSpec
	roles     []string // the roles its prompts hold
	kind      string   // the task kind of its prompts

	mu        sync.Mutex
	turns     []sessionTurn
	busy      bool       // a prompt is starting or running
	task      *Task      // the running prompt's task, once started
	cancelled bool       // Cancel came while the prompt was starting
	gen       uint64     // numbers the prompts started
	idle      *sync.Cond // signalled, on mu, when a prompt settles
	closed    bool
}

func newSession(s *Sessions, id string, spec SessionSpec, servers []string) *Session {
	x := &Session{s: s, id: id, workspace: spec.Workspace, servers: servers, spec: spec}
	x.idle = sync.NewCond(&x.mu)
	return x
}

// sessionTurn is one settled prompt as later prompts carry it: the
// messages it added to the conversation.
type sessionTurn struct {
	messages []model.Message
	// taskID and prompt name the turn's task, for a resume.
	taskID, prompt string
}

// turnOf is the turn a settled task adds to its session: the messages it
// added when it completed, or else its prompt and a note of how it ended
// (a task cut short leaves no well-formed turns to carry).
func turnOf(prompt string, o *event.Outcome, transcript []model.Message) sessionTurn {
	return sessionTurn{messages: engine.TurnOf(prompt, o, transcript)}
}

func invalid(format string, args ...any) error {
	return &SessionError{Code: SessionInvalid, Message: fmt.Sprintf(format, args...)}
}

// canonicalDir is dir, which must be an absolute path to an existing
// directory, with every symbolic link resolved.
func canonicalDir(dir string) (string, error) {
	if !filepath.IsAbs(dir) {
		return "", invalid("the working directory %q is not an absolute path", textx.Shorten(dir, 256))
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", invalid("the working directory %q does not exist", textx.Shorten(dir, 256))
	}
	fi, err := os.Stat(real)
	if err != nil || !fi.IsDir() {
		return "", invalid("the working directory %q is not a directory", textx.Shorten(dir, 256))
	}
	return real, nil
}

// check validates a session request: its working directory and the MCP
// servers it selects or defines. It returns the session's spec and the
// selected configured server names (nil: every server).
func (s *Sessions) check(req SessionRequest) (SessionSpec, []string, error) {
	ws, err := canonicalDir(req.Cwd)
	if err != nil {
		return SessionSpec{}, nil, err
	}
	if err := s.checkWorkspace(ws, req.Cwd); err != nil {
		return SessionSpec{}, nil, err
	}
	spec := SessionSpec{Workspace: ws}
	if len(req.MCPServers) == 0 {
		return spec, nil, s.checkOwn(spec)
	}
	var names, seen []string
	for _, c := range req.MCPServers {
		if slices.Contains(seen, c.Name) {
			return SessionSpec{}, nil, invalid("the MCP server %q is named twice", textx.Shorten(c.Name, 64))
		}
		seen = append(seen, c.Name)
		i := slices.IndexFunc(s.opts.MCPServers, func(h SessionMCPServer) bool {
			return h.Name == c.Name && h.Command == c.Command && slices.Equal(h.Args, c.Args) && h.URL == c.URL
		})
		if i >= 0 && len(c.Env) == 0 && len(c.Headers) == 0 {
			names = append(names, c.Name)
			continue
		}
		if !s.opts.ClientMCPServers {
			return SessionSpec{}, nil, invalid("the MCP server %q is not one the host configured, and this deployment runs no client's servers "+
				"(set options.interfaces.acp.client_mcp_servers = true to run them under its policy and sandbox)", textx.Shorten(c.Name, 64))
		}
		if err := checkClientServer(c, s.opts.MCPServers); err != nil {
			return SessionSpec{}, nil, err
		}
		spec.ClientMCPServers = append(spec.ClientMCPServers, cloneServer(c))
	}
	if names == nil {
		// Only the client's own servers: the configured ones are not
		// selected away by naming none of them.
		return spec, nil, s.checkOwn(spec)
	}
	return spec, names, s.checkOwn(spec)
}

// roles are the roles a session asking for asked holds (NarrowRoles).
func (s *Sessions) roles(asked []string) ([]string, error) {
	roles, err := authority.NarrowRoles(s.opts.Roles, asked)
	if err != nil {
		return nil, invalid("%v (pablo acp --role gives a session its roles)", err)
	}
	return roles, nil
}

// kind is the task kind of a session asking for asked: the host's kind
// (SessionOptions.Kind) unless it names one, which must be valid and,
// when the host gives a kind, that kind. A session narrows from every
// Skill to one kind's; it never leaves the host's kind for another, nor
// for none.
func (s *Sessions) kind(asked string) (string, error) {
	if err := skills.ValidateTaskKind(asked); err != nil {
		return "", invalid("%v", err)
	}
	host := s.opts.Kind
	switch {
	case asked == "":
		return host, nil
	case host == "" || asked == host:
		return asked, nil
	}
	return "", invalid("the session asks for task kind %q, but the host's sessions are of kind %q (pablo acp --kind): a session may not leave it", asked, host)
}

// checkWorkspace accepts a canonical working directory that is the
// deployment's workspace or inside one of the workspace roots.
func (s *Sessions) checkWorkspace(ws, asked string) error {
	if s.workspace == "" || ws == s.workspace {
		return nil
	}
	for _, root := range s.opts.WorkspaceRoots {
		if ws == root || strings.HasPrefix(ws, root+string(filepath.Separator)) {
			return nil
		}
	}
	if len(s.opts.WorkspaceRoots) == 0 {
		return invalid("the working directory %q is not the deployment's workspace (options.interfaces.acp.workspace_roots admits others)", textx.Shorten(asked, 256))
	}
	return invalid("the working directory %q is neither the deployment's workspace nor inside one of its workspace roots", textx.Shorten(asked, 256))
}

// checkOwn refuses a session that is not the deployment's own when the
// host gave no runtime for such sessions.
func (s *Sessions) checkOwn(spec SessionSpec) error {
	if spec.own(s.workspace) || s.opts.SessionRuntime != nil {
		return nil
	}
	return invalid("this host runs sessions in its bound workspace with its configured MCP servers only")
}

// New opens a session.
func (s *Sessions) New(ctx context.Context, req SessionRequest) (*Session, error) {
	spec, servers, err := s.check(req)
	if err != nil {
		return nil, err
	}
	roles, err := s.roles(req.Roles)
	if err != nil {
		return nil, err
	}
	kind, err := s.kind(req.Kind)
	if err != nil {
		return nil, err
	}
	x := newSession(s, s.opts.NewID(), spec, servers)
	x.roles, x.kind = roles, kind
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.open[x.id]; dup {
		return nil, fmt.Errorf("pablo: session ID %q reused by SessionOptions.NewID", x.id)
	}
	s.open[x.id] = x
	return x, nil
}

// Get returns an open session by ID.
func (s *Sessions) Get(id string) (*Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if x := s.open[id]; x != nil {
		return x, nil
	}
	return nil, &SessionError{Code: SessionUnknown, Message: fmt.Sprintf("no open session %q", textx.Shorten(id, 128))}
}

// storedTask is one session task as the store holds it.
type storedTask struct {
	id      string
	link    ledger.SessionLink
	updated time.Time
	recs    []ledger.Record // read by Load only
}

// stored reads the tasks of the session sessionID (of every session when
// it is empty) from the store's index of sessions (see
// [ledger.SessionTasks]), without their records, in task ID order and then
// by turn, and keeps those keep accepts.
func (s *Sessions) stored(ctx context.Context, sessionID string, keep func(ledger.SessionLink) bool) ([]storedTask, error) {
	if s.opts.Store == nil {
		return nil, &SessionError{Code: SessionNoStore, Message: "sessions are listed and loaded from a store, and none is configured"}
	}
	var out []storedTask
	for st, err := range ledger.SessionTasks(ctx, s.opts.Store, sessionID) {
		if err != nil {
			return nil, err
		}
		if keep(st.Session) {
			out = append(out, storedTask{id: st.TaskID, link: st.Session, updated: st.Updated})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].id < out[j].id })
	sort.SliceStable(out, func(i, j int) bool { return out[i].link.Turn < out[j].link.Turn })
	return out, nil
}

// List yields the sessions the store holds for workspace (every workspace
// when it is empty), the most recently updated first.
func (s *Sessions) List(ctx context.Context, workspace string) iter.Seq2[SessionInfo, error] {
	return func(yield func(SessionInfo, error) bool) {
		if workspace != "" {
			if ws, err := canonicalDir(workspace); err == nil {
				workspace = ws
			}
		}
		tasks, err := s.stored(ctx, "", func(l ledger.SessionLink) bool { return workspace == "" || l.Workspace == workspace })
		if err != nil {
			yield(SessionInfo{}, err)
			return
		}
		byID := map[string]*SessionInfo{}
		var infos []*SessionInfo
		for _, t := range tasks {
			info := byID[t.link.SessionID]
			if info == nil {
				info = &SessionInfo{ID: t.link.SessionID, Workspace: t.link.Workspace}
				byID[info.ID] = info
				infos = append(infos, info)
			}
			if info.Title == "" || t.link.Turn == 1 {
				info.Title = textx.Shorten(strings.Join(strings.Fields(t.link.Prompt), " "), 256)
			}
			if t.updated.After(info.UpdatedAt) {
				info.UpdatedAt = t.updated
			}
			info.Tasks = append(info.Tasks, t.id)
		}
		sort.SliceStable(infos, func(i, j int) bool { return infos[i].UpdatedAt.After(infos[j].UpdatedAt) })
		for _, info := range infos {
			if !yield(*info, nil) {
				return
			}
		}
	}
}

// Load reopens a session the store holds, with req's working directory
// and servers, and returns its earlier turns, oldest first, to replay. A
// task cut off by a crash is reported with its unknown calls, never
// replayed; the conversation continues from the turns that settled.
func (s *Sessions) Load(ctx context.Context, id string, req SessionRequest) (*Session, []SessionTurn, error) {
	spec, servers, err := s.check(req)
	if err != nil {
		return nil, nil, err
	}
	roles, err := s.roles(req.Roles)
	if err != nil {
		return nil, nil, err
	}
	kind, err := s.kind(req.Kind)
	if err != nil {
		return nil, nil, err
	}
	ws := spec.Workspace
	tasks, err := s.stored(ctx, id, func(l ledger.SessionLink) bool { return l.SessionID == id })
	if err != nil {
		return nil, nil, err
	}
	if len(tasks) == 0 {
		return nil, nil, &SessionError{Code: SessionUnknown, Message: fmt.Sprintf("the store holds no session %q", textx.Shorten(id, 128))}
	}
	if tasks[0].link.Workspace != ws {
		return nil, nil, invalid("session %q ran in another workspace", textx.Shorten(id, 128))
	}
	x := newSession(s, id, spec, servers)
	x.roles, x.kind = roles, kind
	var turns []SessionTurn
	for _, t := range tasks {
		if t.recs, err = s.opts.Store.Records(ctx, t.id); err != nil {
			return nil, nil, err
		}
		turn, err := replayTurn(ctx, s.opts.Store, t)
		if err != nil {
			return nil, nil, err
		}
		turns = append(turns, turn)
		// The store keeps a turn's events, not its messages: a loaded
		// session carries each earlier turn as its prompt and answer.
		st := turnOf(t.link.Prompt, turn.Outcome, nil)
		st.taskID, st.prompt = t.id, t.link.Prompt
		x.turns = append(x.turns, st)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open[id] != nil {
		return nil, nil, invalid("session %q is already open", textx.Shorten(id, 128))
	}
	s.open[id] = x
	return x, turns, nil
}

// replayTurn rebuilds a stored task's events and outcome from its records.
func replayTurn(ctx context.Context, store ledger.Store, t storedTask) (SessionTurn, error) {
	turn := SessionTurn{TaskID: t.id, Prompt: t.link.Prompt}
	events, outcome, err := engine.ReplayEvents(t.recs, t.id, t.link.SessionID)
	turn.Events, turn.Outcome = events, outcome
	if err != nil {
		return turn, err
	}
	if turn.Outcome == nil {
		rep, err := ledger.RecoverTask(ctx, store, t.id)
		if err != nil {
			return turn, err
		}
		turn.Unknown = rep.Unknown
	}
	return turn, nil
}

// ID returns the session ID.
func (x *Session) ID() string { return x.id }

// Kind returns the task kind of the session's prompts
// (SessionRequest.Kind, else SessionOptions.Kind); empty when it has
// none, and every activated Skill is its.
func (x *Session) Kind() string { return x.kind }

// Prompt starts the session's next task with input, asking approver about
// calls that need approval. A session runs one prompt at a time: a second
// while one runs is refused with SessionBusy, and a prompt past
// MaxSessions running sessions or MaxPrompts prompts with SessionLimit.
// The task's events are its updates and its task object the terminal one.
func (x *Session) Prompt(ctx context.Context, input string, approver Approver) (*Task, error) {
	x.mu.Lock()
	err := x.refuse()
	if err == nil && len(x.turns) >= x.s.opts.MaxPrompts {
		err = &SessionError{Code: SessionLimit, Message: fmt.Sprintf("session %q reached its %d prompts; open a new session", x.id, x.s.opts.MaxPrompts)}
	}
	if err == nil {
		err = x.admit()
	}
	if err != nil {
		x.mu.Unlock()
		return nil, err
	}
	req := TaskRequest{Input: input, History: x.history(), SessionID: x.id, Workspace: x.workspace, MCPServers: x.servers,
		Roles: x.roles, Kind: x.kind, Approver: approver, turn: uint64(len(x.turns) + 1)}
	gen := x.gen
	x.mu.Unlock()
	keep := func(turn sessionTurn) { x.turns = append(x.turns, turn) }
	return x.start(ctx, gen, input, keep, func(rt *Runtime, settled func(*TaskObject, []model.Message)) (*Task, error) {
		req.settled = settled
		return rt.StartTask(ctx, req)
	})
}

// Resume continues a prompt of the session whose host stopped before it
// settled (a turn [Sessions.Load] reported without an outcome), as
// [Runtime.ResumeTask] does, carrying the session's turns before it as
// its conversation. When it settles its turn is the one the session
// carries on. The session runs one prompt at a time, as Prompt.
func (x *Session) Resume(ctx context.Context, taskID string, approver Approver) (*Task, error) {
	x.mu.Lock()
	i := slices.IndexFunc(x.turns, func(t sessionTurn) bool { return t.taskID == taskID })
	err := x.refuse()
	if err == nil && i < 0 {
		err = invalid("session %q has no prompt of task %q", x.id, textx.Shorten(taskID, 128))
	}
	if err == nil {
		err = x.admit()
	}
	if err != nil {
		x.mu.Unlock()
		return nil, err
	}
	earlier := make([][]model.Message, i)
	for j := range earlier {
		earlier[j] = x.turns[j].messages
	}
	prompt := x.turns[i].prompt
	req := ResumeRequest{Approver: approver, Roles: x.roles, Kind: x.kind, history: engine.History(earlier, x.s.opts.MaxHistoryBytes)}
	gen := x.gen
	x.mu.Unlock()
	keep := func(turn sessionTurn) {
		if i < len(x.turns) && x.turns[i].taskID == taskID {
			x.turns[i] = turn
		}
	}
	return x.start(ctx, gen, prompt, keep, func(rt *Runtime, settled func(*TaskObject, []model.Message)) (*Task, error) {
		req.settled = settled
		return rt.ResumeTask(ctx, taskID, req)
	})
}

// refuse is why the session takes no prompt now (x.mu held): it is
// closed, or running one.
func (x *Session) refuse() error {
	switch {
	case x.closed:
		return &SessionError{Code: SessionUnknown, Message: fmt.Sprintf("session %q is closed", x.id)}
	case x.busy:
		return &SessionError{Code: SessionBusy, Message: fmt.Sprintf("session %q is running a prompt; cancel it or wait for its answer", x.id)}
	}
	return nil
}

// admit takes one of the handler's running prompts for the session (x.mu
// held) and starts its next generation, or refuses past MaxSessions.
func (x *Session) admit() error {
	s := x.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running >= s.opts.MaxSessions {
		return &SessionError{Code: SessionLimit, Message: fmt.Sprintf("%d sessions are running prompts, the most allowed; retry when one answers", s.opts.MaxSessions)}
	}
	s.running++
	x.busy, x.cancelled = true, false
	x.gen++
	return nil
}

// start runs the prompt admitted as generation gen on the session's
// runtime (the runtime may be rebuilt here, as a host re-reads its
// deployment: not under the session's lock, so Cancel is never kept
// waiting). begin starts its task with the settled hook, which hands
// keep (under x.mu) the turn it adds; the admission is released when
// the task settles or fails to start.
func (x *Session) start(ctx context.Context, gen uint64, prompt string, keep func(sessionTurn), begin func(*Runtime, func(*TaskObject, []model.Message)) (*Task, error)) (*Task, error) {
	s := x.s
	release := func(turn *sessionTurn) {
		x.mu.Lock()
		if turn != nil {
			keep(*turn)
		}
		x.busy, x.task = false, nil
		x.idle.Broadcast()
		x.mu.Unlock()
		s.mu.Lock()
		s.running--
		s.mu.Unlock()
	}
	var rt *Runtime
	var err error
	if x.spec.own(s.workspace) {
		rt, err = s.opts.Runtime(ctx)
	} else {
		rt, err = s.opts.SessionRuntime(ctx, x.spec)
	}
	if err != nil {
		release(nil)
		return nil, err
	}
	t, err := begin(rt, func(obj *TaskObject, transcript []model.Message) {
		turn := turnOf(prompt, obj.Outcome, transcript)
		turn.taskID, turn.prompt = *obj.RunID, prompt
		release(&turn)
	})
	if err != nil {
		release(nil)
		return nil, err
	}
	x.mu.Lock()
	if x.busy && x.gen == gen {
		x.task = t // unless it already settled
	}
	cancelled := x.cancelled || x.closed
	x.mu.Unlock()
	if cancelled {
		t.Cancel()
	}
	return t, nil
}

// history is the conversation a new prompt carries (see [engine.History]).
func (x *Session) history() []model.Message {
	turns := make([][]model.Message, len(x.turns))
	for i, t := range x.turns {
		turns[i] = t.messages
	}
	return engine.History(turns, x.s.opts.MaxHistoryBytes)
}

// Cancel cancels the session's running prompt, if any; it settles as
// cancelled once everything it started has been joined.
func (x *Session) Cancel() {
	x.mu.Lock()
	t := x.task
	if x.busy && t == nil {
		x.cancelled = true // cancelled as soon as it starts
	}
	x.mu.Unlock()
	if t != nil {
		t.Cancel()
	}
}

// Close cancels the running prompt, waits for it to settle, and forgets
// the session; its tasks stay in the store.
func (x *Session) Close() error {
	x.mu.Lock()
	x.closed = true
	gen := x.gen
	for x.busy && x.gen == gen {
		// A prompt starting is cancelled as it starts (Prompt sees closed);
		// a running one now. Either way Close returns once it settled.
		if x.task != nil {
			x.task.Cancel()
		}
		x.idle.Wait()
	}
	x.mu.Unlock()
	x.s.mu.Lock()
	delete(x.s.open, x.id)
	x.s.mu.Unlock()
	return nil
}
