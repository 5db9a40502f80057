package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/internal/jsonrpc"
)

// Serve serves one ACP v1 connection over newline-delimited JSON-RPC: it
// reads the client's messages from in and writes only JSON-RPC frames to
// out, running each session's prompts on sessions. It returns nil when in
// ends (EOF), ctx.Err() when ctx ends, and otherwise why it closed the
// connection: a broken frame (ErrFrame, a *FrameError), ErrInputLimit,
// ErrMessageLimit, ErrWriteStalled or the output's write error.
//
// Whatever ends the connection, every running prompt is cancelled, its
// task joined and its answer (cancelled) written while out still works,
// before Serve returns. When out implements io.Closer, a stalled write is
// ended by closing it; when it takes write deadlines, by the deadline.
// Serve closes in when it is an io.Closer, so that a client still writing
// gets an error. Its reading goroutine is joined before Serve returns when
// the read in flight can be interrupted: in is an io.PipeReader, or takes a
// read deadline (a pollable file, a network connection). A read that
// cannot be (a blocking file such as an inherited stdin) is left to end
// with in; it touches nothing of the connection.
func Serve(ctx context.Context, sessions *pablo.Sessions, in io.Reader, out io.Writer, opts Options) error {
	if sessions == nil {
		return errors.New("acp: Serve needs a session handler")
	}
	c := newConn(ctx, sessions, out, opts.withDefaults())
	return c.serve(ctx, in)
}

// conn is one connection: the reader loop (which is also the control lane:
// cancels and answers to the agent's requests are handled as they are
// read, never behind a prompt), one forwarder per running prompt, and the
// writer.
type conn struct {
	opts Options
	h    *pablo.Sessions
	w    *writer
	log  *slog.Logger

	// work is the context of every prompt; it ends when the connection
	// closes.
	work       context.Context
	cancelWork context.CancelFunc

	mu          sync.Mutex
	initialized bool
	ext         extensions
	readText    bool // the client serves fs/read_text_file
	sessions    map[string]*session
	sessionless int // messages that named no session of this connection
	calls       map[string]*call
	nextCall    int64
	prompts     sync.WaitGroup
}

// session is a session of this connection.
type session struct {
	s        *pablo.Session
	id       string
	cwd      string // the working directory the client opened it with
	messages int
	run      *promptRun // the running prompt, or nil
}

// call is a request of the agent waiting for the client's answer.
type call struct {
	session string
	answer  chan *message
	// free: the answer is not counted against the session's messages
	// (a file the agent asked for; the agent's own calls bound them).
	free bool
}

// message is one JSON-RPC 2.0 message in either direction.
type message struct {
	JSONRPC string            `json:"jsonrpc"`
	ID      json.RawMessage   `json:"id,omitempty"`
	Method  string            `json:"method,omitempty"`
	Params  json.RawMessage   `json:"params,omitempty"`
	Result  json.RawMessage   `json:"result,omitempty"`
	Error   *sdk.RequestError `json:"error,omitempty"`
}

func newConn(ctx context.Context, h *pablo.Sessions, out io.Writer, opts Options) *conn {
	work, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c := &conn{opts: opts, h: h, log: opts.Logger, work: work, cancelWork: cancel,
		sessions: map[string]*session{}, calls: map[string]*call{}}
	c.w = newWriter(out, opts.Clock, opts.WriteTimeout, cancel)
	return c
}

// frameRead is one result of the reader goroutine; the loop acknowledges
// it before the reader reuses its buffer.
type frameRead struct {
	frame []byte
	n     int64 // its number
	err   error
}

func (c *conn) serve(ctx context.Context, in io.Reader) error {
	reads := make(chan frameRead)
	next := make(chan struct{})
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		fr := newFrameReader(in, c.opts.MaxLine, c.opts.MaxInput)
		for {
			frame, err := fr.next()
			select {
			case reads <- frameRead{frame, fr.frames, err}:
			case <-c.work.Done():
				return
			}
			if err != nil {
				return
			}
			select {
			case <-next:
			case <-c.work.Done():
				return
			}
		}
	}()

	var err error
loop:
	for {
		select {
		case <-ctx.Done():
			err = ctx.Err()
			break loop
		case <-c.w.failed:
			err = c.w.failure()
			break loop
		case r := <-reads:
			if r.err != nil {
				if !errors.Is(r.err, io.EOF) {
					err = r.err
				}
				break loop
			}
			if err = c.handle(r.frame); err != nil {
				var fe *FrameError
				if errors.As(err, &fe) && fe.Frame == 0 {
					fe.Frame = r.n
				}
				break loop
			}
			select {
			case next <- struct{}{}:
			case <-c.work.Done():
				// A stalled write cancelled the work, and the reader may
				// have returned instead of waiting for next: the writer
				// has failed, which the loop's next select sees.
			}
		}
	}
	if err != nil {
		c.log.Warn("acp: closing the connection", "reason", err.Error())
	}
	c.shutdown()
	// The connection takes no more input: a client still writing gets an
	// error instead of blocking, and the read in flight returns.
	joinable := false
	if d, ok := in.(interface{ SetReadDeadline(time.Time) error }); ok && d.SetReadDeadline(time.Unix(1, 0)) == nil {
		joinable = true // a pollable file or a connection: the read returns now
	}
	if cl, ok := in.(io.Closer); ok {
		cl.Close()
		if _, pipe := in.(*io.PipeReader); pipe {
			joinable = true
		}
	}
	if joinable {
		<-readerDone
	}
	if werr := c.w.close(); err == nil && werr != nil && !errors.Is(werr, errWriterClosed) {
		err = werr
	}
	return err
}

// shutdown cancels every prompt and waits for each to be joined and
// answered.
func (c *conn) shutdown() {
	c.mu.Lock()
	for _, st := range c.sessions {
		if st.run != nil {
			st.run.stop()
		}
	}
	c.mu.Unlock()
	c.cancelWork()
	c.prompts.Wait()
}

// handle dispatches one frame. An error closes the connection.
func (c *conn) handle(frame []byte) error {
	var m message
	if err := json.Unmarshal(frame, &m); err != nil {
		return &FrameError{Rule: FrameMalformed, Detail: "not a JSON-RPC message: " + jsonProblem(err)}
	}
	// A member written twice, or an id JSON-RPC does not allow, is an
	// Invalid Request whose id cannot be trusted: answered with id null,
	// never with whichever id the decoder kept.
	if err := jsonrpc.CheckEnvelope(frame); err != nil {
		if err := c.countSessionless(); err != nil {
			return err
		}
		return c.replyError(nil, sdk.NewInvalidRequest(map[string]any{"error": err.Error()}))
	}
	switch {
	case m.JSONRPC != "2.0":
		if err := c.countSessionless(); err != nil {
			return err
		}
		return c.replyError(m.ID, sdk.NewInvalidRequest(map[string]any{"error": `"jsonrpc" must be "2.0"`}))
	case m.Method == "" && m.ID != nil && (m.Result != nil || m.Error != nil):
		return c.answer(&m)
	case m.Method == "":
		if err := c.countSessionless(); err != nil {
			return err
		}
		return c.replyError(m.ID, sdk.NewInvalidRequest(map[string]any{"error": "a request names its method"}))
	case m.ID == nil:
		return c.notification(&m)
	}
	return c.request(&m)
}

// jsonProblem describes a decoding error without quoting the input.
func jsonProblem(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return "invalid JSON at byte " + strconv.FormatInt(se.Offset, 10)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return "field " + strconv.Quote(te.Field) + " must be " + te.Type.String()
	}
	return "invalid JSON"
}

func (c *conn) request(m *message) error {
	if m.Method != sdk.AgentMethodInitialize && !c.isInitialized() {
		if err := c.countSessionless(); err != nil {
			return err
		}
		return c.replyError(m.ID, sdk.NewInvalidRequest(map[string]any{"error": "send initialize first"}))
	}
	switch m.Method {
	case sdk.AgentMethodInitialize:
		return c.initialize(m)
	case sdk.AgentMethodSessionNew:
		return c.newSession(m)
	case sdk.AgentMethodSessionPrompt:
		return c.prompt(m)
	case sdk.AgentMethodSessionCancel:
		if err := c.cancel(m); err != nil {
			return err
		}
		return c.reply(m.ID, struct{}{})
	case sdk.AgentMethodSessionLoad, sdk.AgentMethodSessionResume, sdk.AgentMethodSessionList:
		if c.opts.Durable {
			switch m.Method {
			case sdk.AgentMethodSessionLoad:
				return c.loadSession(m, true)
			case sdk.AgentMethodSessionResume:
				return c.loadSession(m, false)
			default:
				return c.listSessions(m)
			}
		}
	case sdk.AgentMethodSessionClose:
		return c.closeSession(m)
	}
	if err := c.countSessionless(); err != nil {
		return err
	}
	return c.replyError(m.ID, methodNotFound(m.Method))
}

func methodNotFound(method string) *sdk.RequestError {
	if len(method) > 128 {
		method = method[:128]
	}
	return sdk.NewMethodNotFound(method)
}

func (c *conn) notification(m *message) error {
	switch m.Method {
	case sdk.AgentMethodSessionCancel:
		return c.cancel(m)
	case "$/cancel_request":
		return c.cancelRequest(m)
	}
	// Unknown notifications are ignored (JSON-RPC), but counted.
	return c.countSessionless()
}

func (c *conn) isInitialized() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.initialized
}

// countSessionless counts a message that names no session of this
// connection.
func (c *conn) countSessionless() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sessionless++
	if c.sessionless > c.opts.MaxSessionless {
		return fmt.Errorf("%w: more than %d messages that name no session", ErrMessageLimit, c.opts.MaxSessionless)
	}
	return nil
}

// count counts a message of st; the caller holds c.mu.
func (c *conn) count(st *session) error {
	st.messages++
	if st.messages > c.opts.MaxMessages {
		return fmt.Errorf("%w: session %s sent more than %d messages", ErrMessageLimit, st.id, c.opts.MaxMessages)
	}
	return nil
}

// lookup returns the session id names and counts the message to it, or
// to the messages of no session when there is none.
func (c *conn) lookup(id string) (*session, error) {
	c.mu.Lock()
	st := c.sessions[id]
	if st != nil {
		err := c.count(st)
		c.mu.Unlock()
		return st, err
	}
	c.mu.Unlock()
	return nil, c.countSessionless()
}

// reply writes a result.
func (c *conn) reply(id json.RawMessage, result any) error {
	enc, err := json.Marshal(result)
	if err != nil {
		return c.replyError(id, sdk.NewInternalError(nil))
	}
	b := make([]byte, 0, len(enc)+64)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"result":`...)
	b = append(b, enc...)
	b = append(b, "}\n"...)
	if len(b)-1 > c.opts.MaxLine {
		return c.replyError(id, sdk.NewInternalError(map[string]any{"error": "the answer is over the frame bound"}))
	}
	return c.send(b)
}

// replyError writes an error; an id the client did not give is null.
func (c *conn) replyError(id json.RawMessage, e *sdk.RequestError) error {
	if id == nil {
		id = json.RawMessage("null")
	}
	enc, err := json.Marshal(e)
	if err != nil {
		enc, _ = json.Marshal(sdk.NewInternalError(nil))
	}
	b := make([]byte, 0, len(enc)+64)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"error":`...)
	b = append(b, enc...)
	b = append(b, "}\n"...)
	return c.send(b)
}

// send writes a frame. A writer that has failed ends the connection
// through the loop, which sees it fail: the error is not the reader's.
func (c *conn) send(frame []byte) error {
	if err := c.w.send(frame); err != nil {
		return err
	}
	return nil
}

// decode decodes params into v, or says what is wrong with them.
func decode(params json.RawMessage, v any) *sdk.RequestError {
	if len(bytes.TrimSpace(params)) == 0 || bytes.Equal(bytes.TrimSpace(params), []byte("null")) {
		return invalidParams("params are required")
	}
	if err := json.Unmarshal(params, v); err != nil {
		return invalidParams(jsonProblem(err))
	}
	return nil
}

func invalidParams(msg string) *sdk.RequestError {
	return sdk.NewInvalidParams(map[string]any{"error": msg})
}
