package pablo

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"time"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/ledger"
)

// TaskRequest is everything a host gives one root task. [Runtime.Start] is
// StartTask with the input alone.
type TaskRequest struct {
	// Input is the task's prompt.
	Input string
	// History is the conversation this task continues: earlier prompts
	// and final answers, user-role task data placed before Input. It
	// grants nothing, and it is never an earlier task's tool transcript.
	History []Message
	// SessionID names the conversation the task belongs to: its events'
	// session_id and the ledger's link from task to session. Empty means
	// the task is its own session (its run ID).
	SessionID string
	// Workspace is recorded with the session link, so a session can be
	// listed by the workspace it ran in. Empty records none.
	Workspace string
	// MCPServers, when not nil, selects the configured MCP servers this
	// task may open, by name: an exact subset of the deployment's. Nil
	// means every configured server.
	MCPServers []string
	// Approver answers the approval requests of this task's calls. Nil
	// means none can be asked: a call that needs approval is denied.
	Approver Approver

	turn uint64 // the prompt's number in its session, from Sessions
}

// Approver answers approval requests. Each request is bound to one call;
// an answer never authorizes a different call. It may block until a human
// answers; ctx ends when the task is cancelled or times out, and the call
// is then denied.
type Approver interface {
	Approve(ctx context.Context, req ApprovalRequest) (bool, error)
}

// ApprovalRequest is one call that needs approval before it runs: the
// capability, its arguments (masked, as the events show them) and their
// digest, the resources it names and the agent that asks.
type ApprovalRequest struct {
	TaskID    string
	AgentID   string
	CallID    string
	Tool      authority.ID
	Arguments json.RawMessage
	// ArgumentsDigest is "sha256:<hex>" of the arguments as the model
	// wrote them: what the answer is bound to.
	ArgumentsDigest string
	Resources       []authority.Resource
	// Decision is the authority's decision that asked for approval: its
	// layer and rule.
	Decision authority.Decision
}

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
	// MaxSessions bounds the sessions whose prompts run at once (0:
	// DefaultMaxSessions). A prompt past it is refused, never queued.
	MaxSessions int
	// MaxPrompts bounds the prompts of one session (0: DefaultMaxPrompts).
	MaxPrompts int
	// MaxHistoryBytes bounds the earlier prompts and answers a prompt
	// carries (0: DefaultMaxHistoryBytes); the oldest turns go first.
	MaxHistoryBytes int
	// Store, when set, is where sessions are listed and loaded from: the
	// store the runtime's tasks record in.
	Store ledger.Store
	// Now and NewID are the clock and the session ID source; nil means
	// the system clock and random UUIDs.
	Now   func() time.Time
	NewID func() string
}

// The session handler's defaults.
const (
	DefaultMaxSessions     = 4
	DefaultMaxPrompts      = 1024
	DefaultMaxHistoryBytes = 256 << 10
)

// SessionMCPServer is an MCP server definition as a session names it: by
// name, with the command and arguments of a stdio server or the URL of an
// HTTP one. A client's definition selects a host-approved server only when
// every field is equal.
type SessionMCPServer struct {
	Name    string
	Command string
	Args    []string
	URL     string
}

// SessionRequest opens a session.
type SessionRequest struct {
	// Cwd is the client's working directory: absolute and existing; it
	// is canonicalized and must equal SessionOptions.Workspace when set.
	Cwd string
	// MCPServers, when not empty, selects host-approved servers; each must
	// equal one of SessionOptions.MCPServers exactly.
	MCPServers []SessionMCPServer
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
	opts SessionOptions
}

// NewSessions returns a session handler.
func NewSessions(opts SessionOptions) (*Sessions, error) {
	if opts.Runtime == nil {
		return nil, errors.New("pablo: SessionOptions.Runtime is required")
	}
	return &Sessions{opts: opts}, nil
}

// Session is one conversation: its prompts run one at a time.
type Session struct {
	s  *Sessions
	id string
}

// New opens a session.
func (s *Sessions) New(ctx context.Context, req SessionRequest) (*Session, error) {
	return nil, errors.New("pablo: sessions: not implemented")
}

// Get returns an open session by ID.
func (s *Sessions) Get(id string) (*Session, error) {
	return nil, &SessionError{Code: SessionUnknown, Message: "no session " + id}
}

// List yields the sessions the store holds for workspace, most recent
// first.
func (s *Sessions) List(ctx context.Context, workspace string) iter.Seq2[SessionInfo, error] {
	return func(yield func(SessionInfo, error) bool) {
		yield(SessionInfo{}, &SessionError{Code: SessionNoStore, Message: "listing sessions needs a store"})
	}
}

// Load reopens a session the store holds and returns the events of its
// earlier tasks, in order, to replay. A task cut off by a crash is
// reported by its recovery, never replayed.
func (s *Sessions) Load(ctx context.Context, id string, req SessionRequest) (*Session, []Event, error) {
	return nil, nil, &SessionError{Code: SessionNoStore, Message: "loading a session needs a store"}
}

// ID returns the session ID.
func (x *Session) ID() string { return x.id }

// Prompt starts the session's next task. A session runs one prompt at a
// time: a second while one runs is refused with SessionBusy. The task's
// events are its updates and its task object is the terminal one.
func (x *Session) Prompt(ctx context.Context, input string, approver Approver) (*Task, error) {
	return nil, errors.New("pablo: sessions: not implemented")
}

// Cancel cancels the session's running prompt, if any.
func (x *Session) Cancel() {}

// Close cancels the running prompt, waits for it, and forgets the session.
func (x *Session) Close() error { return nil }
