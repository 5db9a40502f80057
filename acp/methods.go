package acp

import (
	"encoding/json"
	"errors"
	"strconv"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/internal/textx"
)

// initialize selects protocol version 1 and the negotiated extensions. A
// second initialize is refused.
func (c *conn) initialize(m *message) error {
	if err := c.countSessionless(); err != nil {
		return err
	}
	var req sdk.InitializeRequest
	if e := decode(m.Params, &req); e != nil {
		return c.replyError(m.ID, e)
	}
	var probe struct {
		ProtocolVersion *json.RawMessage `json:"protocolVersion"`
	}
	if json.Unmarshal(m.Params, &probe) != nil || probe.ProtocolVersion == nil {
		return c.replyError(m.ID, invalidParams("protocolVersion is required"))
	}
	c.mu.Lock()
	if c.initialized {
		c.mu.Unlock()
		return c.replyError(m.ID, sdk.NewInvalidRequest(map[string]any{"error": "the connection is already initialized"}))
	}
	ext, echo := negotiate(req.ClientCapabilities.Meta)
	c.initialized = true
	c.ext = ext
	c.readText = req.ClientCapabilities.Fs.ReadTextFile
	c.mu.Unlock()

	caps := sdk.AgentCapabilities{
		Meta:            echo,
		LoadSession:     c.opts.Durable,
		McpCapabilities: sdk.McpCapabilities{Http: true},
		// Text and resource links only: links are baseline in ACP and
		// become textual references; image, audio and embedded context
		// are refused.
		PromptCapabilities:  sdk.PromptCapabilities{},
		SessionCapabilities: sdk.SessionCapabilities{Close: &sdk.SessionCloseCapabilities{}},
	}
	if c.opts.Durable {
		caps.SessionCapabilities.List = &sdk.SessionListCapabilities{}
		caps.SessionCapabilities.Resume = &sdk.SessionResumeCapabilities{}
	}
	return c.reply(m.ID, sdk.InitializeResponse{
		ProtocolVersion:   sdk.ProtocolVersionNumber,
		AgentCapabilities: caps,
		AgentInfo:         &sdk.Implementation{Name: c.opts.Agent.Name, Version: c.opts.Agent.Version},
		AuthMethods:       []sdk.AuthMethod{},
	})
}

// sessionRequest converts a client's cwd and MCP servers. A server equal
// to a host-approved one (no env, no headers) selects it; any other is the
// client's own, which the session handler runs only when the deployment
// admits a client's servers (options.interfaces.acp.client_mcp_servers),
// with the client's env and header values as secrets.
// sessionRoles reads the roles a session asks for from its request's
// _meta["pablo/v2"].roles, an array of role names: nil when absent (the
// session holds every role the host gives, pablo acp --role). A client
// only narrows: a role the host does not give refuses the session.
func sessionRoles(meta map[string]any) ([]string, *sdk.RequestError) {
	v2, _ := meta[ExtV2].(map[string]any)
	raw, present := v2["roles"]
	if !present {
		return nil, nil
	}
	list, ok := raw.([]any)
	if !ok || len(list) > 16 {
		return nil, invalidParams(`_meta["pablo/v2"].roles must be an array of at most 16 role names`)
	}
	roles := make([]string, 0, len(list))
	for _, r := range list {
		s, ok := r.(string)
		if !ok {
			return nil, invalidParams(`_meta["pablo/v2"].roles must be an array of role names (strings)`)
		}
		roles = append(roles, s)
	}
	return roles, nil
}

// sessionKind reads the task kind a session asks for from its request's
// _meta["pablo/v2"].kind, a string: empty when absent (the session is of
// the host's kind, pablo acp --kind, or of none). A client only narrows:
// a kind other than the host's refuses the session (pablo.Sessions
// checks it, and that it is a valid kind).
func sessionKind(meta map[string]any) (string, *sdk.RequestError) {
	v2, _ := meta[ExtV2].(map[string]any)
	raw, present := v2["kind"]
	if !present {
		return "", nil
	}
	kind, ok := raw.(string)
	if !ok {
		return "", invalidParams(`_meta["pablo/v2"].kind must be a task kind (a string)`)
	}
	return kind, nil
}

func sessionRequest(cwd string, servers []sdk.McpServer, dirs []string) (pablo.SessionRequest, *sdk.RequestError) {
	req := pablo.SessionRequest{Cwd: cwd}
	if cwd == "" {
		return req, invalidParams("cwd is required: the absolute path of the workspace")
	}
	if len(dirs) > 0 {
		return req, invalidParams("additionalDirectories are not supported: the session's workspace is its cwd")
	}
	for i, s := range servers {
		at := "mcpServers[" + strconv.Itoa(i) + "]"
		switch {
		case s.Stdio != nil:
			srv := pablo.SessionMCPServer{Name: s.Stdio.Name, Command: s.Stdio.Command, Args: s.Stdio.Args}
			for _, e := range s.Stdio.Env {
				if srv.Env == nil {
					srv.Env = map[string]string{}
				}
				if _, dup := srv.Env[e.Name]; dup {
					return req, invalidParams(at + ": env names " + strconv.Quote(cut(e.Name, 64)) + " twice")
				}
				srv.Env[e.Name] = e.Value
			}
			req.MCPServers = append(req.MCPServers, srv)
		case s.Http != nil:
			srv := pablo.SessionMCPServer{Name: s.Http.Name, URL: s.Http.Url}
			for _, h := range s.Http.Headers {
				if srv.Headers == nil {
					srv.Headers = map[string]string{}
				}
				if _, dup := srv.Headers[h.Name]; dup {
					return req, invalidParams(at + ": headers name " + strconv.Quote(cut(h.Name, 64)) + " twice")
				}
				srv.Headers[h.Name] = h.Value
			}
			req.MCPServers = append(req.MCPServers, srv)
		default:
			return req, invalidParams(at + ": only stdio and http servers are supported (this agent does not advertise sse)")
		}
	}
	return req, nil
}

// sessionError maps the session handler's refusals to -32602 and anything
// else to -32603.
func sessionError(err error) *sdk.RequestError {
	var se *pablo.SessionError
	if errors.As(err, &se) {
		return sdk.NewInvalidParams(map[string]any{"error": se.Message, "code": se.Code})
	}
	return sdk.NewInternalError(map[string]any{"error": "the session handler failed"})
}

func (c *conn) newSession(m *message) error {
	var req sdk.NewSessionRequest
	e := decode(m.Params, &req)
	var sreq pablo.SessionRequest
	if e == nil {
		sreq, e = sessionRequest(req.Cwd, req.McpServers, req.AdditionalDirectories)
	}
	if e == nil {
		sreq.Roles, e = sessionRoles(req.Meta)
	}
	if e == nil {
		sreq.Kind, e = sessionKind(req.Meta)
	}
	if e != nil {
		if err := c.countSessionless(); err != nil {
			return err
		}
		return c.replyError(m.ID, e)
	}
	s, err := c.h.New(c.work, sreq)
	if err != nil {
		if cerr := c.countSessionless(); cerr != nil {
			return cerr
		}
		c.log.Info("acp: session/new refused", "error", err.Error())
		return c.replyError(m.ID, sessionError(err))
	}
	c.mu.Lock()
	c.sessions[s.ID()] = &session{s: s, id: s.ID(), cwd: req.Cwd, messages: 1}
	c.mu.Unlock()
	if err := c.reply(m.ID, sdk.NewSessionResponse{SessionId: sdk.SessionId(s.ID())}); err != nil {
		return err
	}
	return c.commands(s)
}

// loadSession reopens a session from the store; with replay its earlier
// updates are sent first (session/load), without it not (session/resume).
func (c *conn) loadSession(m *message, replay bool) error {
	var id, cwd string
	var servers []sdk.McpServer
	var dirs []string
	var meta map[string]any
	var e *sdk.RequestError
	if replay {
		var req sdk.LoadSessionRequest
		e = decode(m.Params, &req)
		id, cwd, servers, dirs, meta = string(req.SessionId), req.Cwd, req.McpServers, req.AdditionalDirectories, req.Meta
	} else {
		var req sdk.ResumeSessionRequest
		e = decode(m.Params, &req)
		id, cwd, servers, dirs, meta = string(req.SessionId), req.Cwd, req.McpServers, req.AdditionalDirectories, req.Meta
	}
	st, err := c.lookup(id)
	if err != nil {
		return err
	}
	var sreq pablo.SessionRequest
	if e == nil && id == "" {
		e = invalidParams("sessionId is required")
	}
	if e == nil {
		sreq, e = sessionRequest(cwd, servers, dirs)
	}
	if e == nil {
		sreq.Roles, e = sessionRoles(meta)
	}
	if e == nil {
		sreq.Kind, e = sessionKind(meta)
	}
	if e == nil && st != nil {
		c.mu.Lock()
		busy := st.run != nil
		c.mu.Unlock()
		if busy {
			e = invalidParams("the session is running a prompt")
		}
	}
	if e != nil {
		return c.replyError(m.ID, e)
	}
	s, events, err := c.h.Load(c.work, id, sreq)
	if err != nil {
		return c.replyError(m.ID, sessionError(err))
	}
	c.mu.Lock()
	if st == nil {
		st = &session{id: s.ID(), messages: 1}
		c.sessions[s.ID()] = st
	}
	st.s, st.cwd = s, cwd
	ext := c.ext
	c.mu.Unlock()
	if replay {
		if err := c.replay(s.ID(), cwd, ext, events); err != nil {
			return err
		}
		if err := c.reply(m.ID, sdk.LoadSessionResponse{}); err != nil {
			return err
		}
		return c.commands(s)
	}
	if err := c.reply(m.ID, sdk.ResumeSessionResponse{}); err != nil {
		return err
	}
	return c.commands(s)
}

// emit writes a projected frame, unless it is over the frame bound: then
// it is logged and dropped.
func (c *conn) emit(frame []byte) error {
	if len(frame)-1 > c.opts.MaxLine {
		c.log.Warn("acp: an update over the frame bound was dropped", "bytes", len(frame))
		return nil
	}
	return c.w.send(frame)
}

// listPage bounds one page of session/list.
const listPage = 100

func (c *conn) listSessions(m *message) error {
	if err := c.countSessionless(); err != nil {
		return err
	}
	var req sdk.ListSessionsRequest
	if len(m.Params) > 0 && string(m.Params) != "null" {
		if e := decode(m.Params, &req); e != nil {
			return c.replyError(m.ID, e)
		}
	}
	skip := 0
	if req.Cursor != nil {
		n, err := strconv.Atoi(*req.Cursor)
		if err != nil || n < 0 {
			return c.replyError(m.ID, invalidParams("cursor is not one this agent gave"))
		}
		skip = n
	}
	workspace := ""
	if req.Cwd != nil {
		workspace = *req.Cwd
	}
	resp := sdk.ListSessionsResponse{Sessions: []sdk.SessionInfo{}}
	i := 0
	for info, err := range c.h.List(c.work, workspace) {
		if err != nil {
			return c.replyError(m.ID, sessionError(err))
		}
		if i < skip {
			i++
			continue
		}
		if len(resp.Sessions) == listPage {
			resp.NextCursor = sdk.Ptr(strconv.Itoa(i))
			break
		}
		i++
		si := sdk.SessionInfo{SessionId: sdk.SessionId(info.ID), Cwd: info.Workspace}
		if info.Title != "" {
			si.Title = sdk.Ptr(info.Title)
		}
		if !info.UpdatedAt.IsZero() {
			si.UpdatedAt = sdk.Ptr(info.UpdatedAt.UTC().Format(time.RFC3339))
		}
		resp.Sessions = append(resp.Sessions, si)
	}
	return c.reply(m.ID, resp)
}

func (c *conn) closeSession(m *message) error {
	var req sdk.CloseSessionRequest
	e := decode(m.Params, &req)
	st, err := c.lookup(string(req.SessionId))
	if err != nil {
		return err
	}
	if e != nil {
		return c.replyError(m.ID, e)
	}
	if st == nil {
		return c.replyError(m.ID, invalidParams("no session "+strconv.Quote(cut(string(req.SessionId), 128))+" on this connection"))
	}
	c.mu.Lock()
	run := st.run
	if run != nil {
		run.cancelled.Store(true)
	}
	delete(c.sessions, st.id)
	c.mu.Unlock()
	if run != nil {
		run.stop()
	}
	// Close cancels the running prompt and waits for it; its forwarder
	// still answers it.
	if err := st.s.Close(); err != nil {
		return c.replyError(m.ID, sessionError(err))
	}
	return c.reply(m.ID, sdk.CloseSessionResponse{})
}

// cancel handles session/cancel: the session's running prompt is
// cancelled; its forwarder answers it (cancelled) once the task is joined
// and its updates are drained. An idle or unknown session is a no-op.
func (c *conn) cancel(m *message) error {
	var req sdk.CancelNotification
	_ = json.Unmarshal(m.Params, &req)
	st, err := c.lookup(string(req.SessionId))
	if err != nil || st == nil {
		return err
	}
	c.mu.Lock()
	run := st.run
	if run != nil {
		run.cancelled.Store(true)
	}
	c.mu.Unlock()
	if run != nil {
		run.stop()
	}
	return nil
}

// cancelRequest handles $/cancel_request: a running prompt with that
// request ID is cancelled as session/cancel would; other requests have
// been answered already.
func (c *conn) cancelRequest(m *message) error {
	var req struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	_ = json.Unmarshal(m.Params, &req)
	c.mu.Lock()
	var run *promptRun
	var st *session
	for _, s := range c.sessions {
		if s.run != nil && sameID(s.run.id, req.RequestID) {
			run, st = s.run, s
			break
		}
	}
	if st == nil {
		c.mu.Unlock()
		return c.countSessionless()
	}
	err := c.count(st)
	if err == nil {
		run.cancelled.Store(true)
	}
	c.mu.Unlock()
	if err != nil {
		return err
	}
	run.stop()
	return nil
}

// sameID compares two JSON-RPC IDs as values: 7 and 7.0 are one ID, "7"
// another.
func sameID(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	switch x.(type) {
	case string, float64:
		return x == y
	}
	return false
}

// answer delivers the client's answer to one of the agent's requests.
func (c *conn) answer(m *message) error {
	key := string(m.ID)
	c.mu.Lock()
	cl := c.calls[key]
	delete(c.calls, key)
	var st *session
	if cl != nil {
		st = c.sessions[cl.session]
	}
	var err error
	if st != nil && !cl.free {
		err = c.count(st)
	}
	c.mu.Unlock()
	if st == nil {
		err = c.countSessionless()
	}
	if err != nil {
		return err
	}
	if cl != nil {
		cl.answer <- m
	}
	return nil
}

// cut bounds client text echoed in an error.
func cut(s string, n int) string { return textx.Cut(s, n) }
